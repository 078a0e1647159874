#include "server/embeddings.h"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstring>

namespace llms {
namespace {

// Fields of other servers' embeddings requests that change the answer and are not
// served here (docs/api.md, "Unknown fields"): refused unless null.
constexpr const char* kRefused[] = {"truncate_prompt_tokens", "embd_normalize", "add_special_tokens", "pooling_type"};

}  // namespace

std::optional<ApiError> parse_embedding_request(const Json& b, EmbeddingRequest* out) {
  EmbeddingRequest r;
  LLMS_API_TRY(read_string(b, "model", &r.model));
  LLMS_API_TRY(parse_prompts(b, &r.inputs, "input"));
  if (r.inputs.size() > static_cast<size_t>(kMaxEmbeddingInputs)) {
    return bad_request(fmt::format("'input' holds {} entries; at most {} per request", r.inputs.size(),
                                   kMaxEmbeddingInputs),
                       "input");
  }
  std::string format = "float";
  LLMS_API_TRY(read_string(b, "encoding_format", &format));
  if (format != "float" && format != "base64") {
    return bad_request(fmt::format("encoding_format must be float or base64, not '{}'", format), "encoding_format");
  }
  r.base64 = format == "base64";
  if (has_field(b, "dimensions")) {
    int64_t d = 0;
    LLMS_API_TRY(read_int(b, "dimensions", 1, int64_t{1} << 20, &d));
    r.dimensions = d;
  }
  LLMS_API_TRY(read_bool(b, "normalize", &r.normalize));
  for (const char* key : kRefused) {
    if (has_field(b, key)) return bad_request(fmt::format("'{}' is not supported by this server", key), key);
  }
  *out = std::move(r);
  return std::nullopt;
}

Pooling served_pooling(const ServerConfig& config, const Model& model) {
  if (config.pooling == "cls") return Pooling::kCls;
  if (config.pooling == "last") return Pooling::kLast;
  if (config.pooling == "mean") return Pooling::kMean;
  const auto type = model.file().get_uint_or(model.config().arch_name + ".pooling_type", 1);
  if (type.ok() && type.value() == 2) return Pooling::kCls;
  if (type.ok() && type.value() == 3) return Pooling::kLast;
  return Pooling::kMean;  // also for none (0) and rank (4): an OpenAI embedding is pooled
}

const char* pooling_name(Pooling p) {
  switch (p) {
    case Pooling::kMean: return "mean";
    case Pooling::kCls: return "cls";
    case Pooling::kLast: return "last";
    case Pooling::kNone: break;
  }
  return "none";
}

void l2_normalize(std::vector<float>* v) {
  double sum = 0;
  for (float x : *v) sum += static_cast<double>(x) * x;
  if (sum <= 0) return;
  const double inv = 1.0 / std::sqrt(sum);
  for (float& x : *v) x = static_cast<float>(x * inv);
}

std::string base64_floats(const std::vector<float>& v) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(v.size() * sizeof(float), '\0');
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t u = std::bit_cast<uint32_t>(v[i]);
    for (int k = 0; k < 4; ++k) bytes[i * 4 + static_cast<size_t>(k)] = static_cast<char>((u >> (8 * k)) & 0xff);
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t chunk = 0;
    for (size_t k = 0; k < 3; ++k) {
      chunk = (chunk << 8) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    }
    for (size_t k = 0; k < 4; ++k) out += k <= n ? kAlphabet[(chunk >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

}  // namespace llms
