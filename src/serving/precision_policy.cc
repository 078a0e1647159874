#include "serving/precision_policy.h"

#include <algorithm>
#include <charconv>
#include <optional>

#include <fmt/format.h>

namespace llms {

Status PrecisionConfig::validate() const {
  return variants.empty() ? ok_status() : policy.validate(static_cast<int>(variants.size()));
}

Status PrecisionPolicy::validate(int n_variants) const {
  if (n_variants < 1) return invalid_argument("precision_variants: no variant");
  const size_t want = static_cast<size_t>(n_variants - 1);
  if (n_variants > 1 && prompt_max.size() != want) {
    return invalid_argument(fmt::format("precision_prompt_max: needs {} limit(s), one per variant but the most precise",
                                        want));
  }
  if (n_variants > 1 && max_tokens_max.size() != want) {
    return invalid_argument(fmt::format(
        "precision_max_tokens: needs {} limit(s), one per variant but the most precise", want));
  }
  for (int v : prompt_max) {
    if (v < 1) return invalid_argument("precision_prompt_max: limits must be at least 1");
  }
  for (int v : max_tokens_max) {
    if (v < 1) return invalid_argument("precision_max_tokens: limits must be at least 1");
  }
  if (!(entropy_bound >= 0) || entropy_bound > 100) {
    return invalid_argument("precision_entropy: must be in [0, 100] nats (0: no fallback)");
  }
  if (window < 1 || window > 4096) return invalid_argument("precision_window: must be in [1, 4096]");
  return ok_status();
}

int choose_precision_variant(const PrecisionPolicy& policy, int64_t prompt_tokens, int64_t max_tokens,
                             int n_variants) {
  for (int i = 0; i + 1 < n_variants; ++i) {
    const size_t k = static_cast<size_t>(i);
    if (k >= policy.prompt_max.size() || k >= policy.max_tokens_max.size()) break;
    if (prompt_tokens <= policy.prompt_max[k] && max_tokens <= policy.max_tokens_max[k]) return i;
  }
  return n_variants - 1;
}

Result<std::vector<DType>> parse_precision_variants(const std::string& text) {
  std::vector<DType> out;
  size_t start = 0;
  while (true) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string name = text.substr(start, end - start);
    const std::optional<DType> t = dtype_from_name(name);
    if (!t) return invalid_argument(fmt::format("'{}' is not a type name (e.g. q4_k,q8_0,f16)", name));
    out.push_back(*t);
    if (end == text.size()) break;
    start = end + 1;
  }
  return out;
}

Result<std::vector<int>> parse_precision_limits(const std::string& text) {
  std::vector<int> out;
  if (text.empty()) return out;
  size_t start = 0;
  while (true) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    int v = 0;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || v < 1) {
      return invalid_argument(fmt::format("'{}' is not a positive integer (expected a list like 32,128)", item));
    }
    out.push_back(v);
    if (end == text.size()) break;
    start = end + 1;
  }
  return out;
}

bool EntropyWatch::push(double entropy) {
  recent_.push_back(entropy);
  sum_ += entropy;
  if (static_cast<int>(recent_.size()) > window_) {
    sum_ -= recent_.front();
    recent_.pop_front();
  }
  return bound_ > 0 && sum_ / static_cast<double>(recent_.size()) > bound_;
}

}  // namespace llms
