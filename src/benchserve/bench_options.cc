#include "benchserve/bench_options.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <sstream>

namespace llms::benchserve {

namespace {

// A whole-string number, or nullopt.
std::optional<double> to_number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, sep)) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

}  // namespace

Result<GoodputSlo> parse_goodput(const std::vector<std::string>& items) {
  GoodputSlo slo;
  std::vector<std::string> parts;
  for (const auto& item : items) {
    for (auto& p : split(item, ' ')) parts.push_back(p);
  }
  if (parts.empty()) return invalid_argument("--goodput needs at least one of ttft:MS tpot:MS e2el:MS");
  for (const auto& p : parts) {
    const size_t colon = p.find(':');
    const std::string key = p.substr(0, colon);
    const auto ms = colon == std::string::npos ? std::nullopt : to_number(p.substr(colon + 1));
    if (!ms || *ms <= 0) {
      return invalid_argument(fmt::format("--goodput '{}': expected KEY:MS with MS > 0 (e.g. ttft:500)", p));
    }
    if (key == "ttft") {
      slo.ttft_ms = *ms;
    } else if (key == "tpot") {
      slo.tpot_ms = *ms;
    } else if (key == "e2el") {
      slo.e2el_ms = *ms;
    } else {
      return invalid_argument(fmt::format("--goodput '{}': unknown metric '{}' (ttft, tpot or e2el)", p, key));
    }
  }
  return slo;
}

Result<std::vector<double>> parse_percentiles(const std::string& csv) {
  std::vector<double> out;
  for (const auto& item : split(csv, ',')) {
    const auto v = to_number(item);
    if (!v || *v <= 0 || *v > 100) {
      return invalid_argument(fmt::format("--percentiles '{}': each must be a number in (0, 100]", item));
    }
    out.push_back(*v);
  }
  if (out.empty()) return invalid_argument("--percentiles is empty (e.g. 50,90,99)");
  return out;
}

Result<double> parse_rate(const std::string& text) {
  if (text == "inf" || text == "Inf" || text == "INF") return kInfiniteRate;
  const auto v = to_number(text);
  if (!v || *v <= 0) return invalid_argument(fmt::format("rate '{}' must be > 0 requests/s or 'inf'", text));
  return *v;
}

Result<std::vector<double>> parse_rates(const std::string& csv) {
  std::vector<double> out;
  for (const auto& item : split(csv, ',')) {
    auto r = parse_rate(item);
    if (!r.ok()) return r.status().with_context("--sweep-rates");
    out.push_back(r.value());
  }
  if (out.empty()) return invalid_argument("--sweep-rates is empty (e.g. 1,2,4,inf)");
  return out;
}

Status validate_options(const BenchOptions& o) {
  if (o.base_url.rfind("http://", 0) != 0 && o.base_url.rfind("https://", 0) != 0) {
    return invalid_argument(fmt::format("--base-url '{}' must start with http:// (e.g. http://127.0.0.1:8080)",
                                        o.base_url));
  }
  if (o.endpoint != "/v1/completions" && o.endpoint != "/v1/chat/completions") {
    return invalid_argument(
        fmt::format("--endpoint '{}': expected /v1/completions or /v1/chat/completions", o.endpoint));
  }
  if (o.num_prompts < 1) return invalid_argument("--num-prompts must be at least 1");
  if (!(o.request_rate > 0)) return invalid_argument("--request-rate must be > 0 or inf");
  if (!(o.burstiness > 0) || !std::isfinite(o.burstiness)) return invalid_argument("--burstiness must be > 0");
  if (o.max_concurrency < 0) return invalid_argument("--max-concurrency must be >= 0 (0: no limit)");
  if (o.warmup < 0) return invalid_argument("--warmup must be >= 0");
  if (o.input_len < 1) return invalid_argument("--input-len must be at least 1");
  if (o.output_len < 1) return invalid_argument("--output-len must be at least 1");
  if (o.range_ratio < 0 || o.range_ratio >= 1) return invalid_argument("--range-ratio must be in [0, 1)");
  if (o.prefix_len < 0) return invalid_argument("--prefix-len must be >= 0");
  if (o.num_prefixes < 1) return invalid_argument("--num-prefixes must be at least 1");
  if (o.temperature < 0) return invalid_argument("--temperature must be >= 0");
  if (o.price_per_hour < 0) return invalid_argument("--price-per-hour must be >= 0");
  if (!(o.timeout_s > 0)) return invalid_argument("--timeout must be > 0 seconds");
  if (o.percentiles.empty()) return invalid_argument("--percentiles is empty");
  return ok_status();
}

std::string rate_label(double rate) { return std::isinf(rate) ? "inf" : fmt::format("{:g}", rate); }

}  // namespace llms::benchserve
