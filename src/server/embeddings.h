// POST /v1/embeddings: OpenAI's embeddings request parsed once, the pooling a model
// serves with, and the response's pieces (float lists or base64 of little-endian
// float32, as the OpenAI SDKs decode them). embeddings_endpoint.cc runs the request:
// one engine request per input (RequestParams::pooling, max_tokens 0), batched with
// everything else like any prefill.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/request.h"
#include "model/model.h"
#include "server/json_util.h"
#include "server/openai_request.h"
#include "server/server_config.h"

namespace llms {

inline constexpr int kMaxEmbeddingInputs = 2048;  // OpenAI's bound on `input` entries

struct EmbeddingRequest {
  std::string model;
  std::vector<PromptSpec> inputs;      // `input`: text or token ids, one embedding each
  bool base64 = false;                 // encoding_format "base64" (else "float")
  std::optional<int64_t> dimensions;   // only the model's own width is served
  bool normalize = true;               // vLLM's: L2-normalize (llama-server's default too)
};

std::optional<ApiError> parse_embedding_request(const Json& body, EmbeddingRequest* out);

// The pooling embeddings use: --pooling, else the model's <arch>.pooling_type (mean,
// cls, last; llama.cpp's numbering), else mean.
Pooling served_pooling(const ServerConfig& config, const Model& model);
const char* pooling_name(Pooling p);

// `v` scaled to unit Euclidean length (unchanged when all zero).
void l2_normalize(std::vector<float>* v);
// The float32 values' little-endian bytes in base64 (RFC 4648, padded).
std::string base64_floats(const std::vector<float>& v);

}  // namespace llms
