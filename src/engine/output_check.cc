#include "engine/output_check.h"

#include <algorithm>

namespace llms {
namespace {

constexpr size_t kMinRepetitionTokens = 16;
constexpr double kRepetitionShare = 0.6;
constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

}  // namespace

double repeated_share(std::span<const int32_t> tokens, int max_period) {
  const size_t n = tokens.size();
  if (n == 0) return 0;
  size_t best = 0;
  for (size_t p = 1; p <= static_cast<size_t>(max_period) && p < n; ++p) {
    size_t run = 0;
    for (size_t i = p; i < n; ++i) {
      run = tokens[i] == tokens[i - p] ? run + 1 : 0;
      if (run > 0) best = std::max(best, run + p);
    }
  }
  return static_cast<double>(std::min(best, n)) / static_cast<double>(n);
}

std::vector<const char*> abnormal_output_kinds(const OutputFacts& out) {
  std::vector<const char*> kinds;
  if (out.finish != FinishReason::kStop && out.finish != FinishReason::kLength) return kinds;
  if (out.text.empty()) kinds.push_back("empty");
  if (out.tokens.size() >= kMinRepetitionTokens && repeated_share(out.tokens) >= kRepetitionShare) {
    kinds.push_back("repetition");
  }
  if (out.text.find(kReplacementChar) != std::string_view::npos) kinds.push_back("invalid_utf8");
  return kinds;
}

}  // namespace llms
