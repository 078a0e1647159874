#include "json_mutator.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace llms::fuzz {
namespace {

using Json = nlohmann::json;
using Rng = std::mt19937;

// Every field name the completion and chat parsers read, and the nested ones.
const char* const kKeys[] = {
    "model", "prompt", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k", "min_p",
    "repetition_penalty", "presence_penalty", "frequency_penalty", "stop", "seed", "n", "stream", "stream_options",
    "include_usage", "logprobs", "top_logprobs", "echo", "user", "priority", "timeout", "ignore_eos", "lane",
    "add_generation_prompt", "best_of", "tools", "tool_choice", "functions", "function_call", "logit_bias",
    "response_format", "type", "suffix", "audio", "modalities", "prediction", "web_search_options", "role",
    "content", "text", "return_token_strs", "tokens", "add_special_tokens",
};

const char* const kStrings[] = {"", "user", "system", "developer", "assistant", "tool", "text", "json_object",
                                "batch", "interactive", "stories260K", "\xff\xfe", "<s>", "<|im_start|>",
                                "a\tb\r\n", "\xe2\x96\x81"};

template <typename T, size_t N>
const T& pick(const T (&arr)[N], Rng& rng) {
  return arr[rng() % N];
}

Json random_number(Rng& rng) {
  static const double kFloats[] = {0.0, 0.5, 1.0, 2.0, 2.0000001, -0.0, -2.0, 1e308, -1e308, 1e-320, 16.0, 1e7};
  static const int64_t kInts[] = {0, 1, -1, 2, 16, 20, 21, 128, 129, 1 << 30, (1LL << 30) + 1, INT64_MAX, INT64_MIN,
                                  -1000001, 1000001};
  switch (rng() % 4) {
    case 0: return pick(kFloats, rng);
    case 1: return std::numeric_limits<uint64_t>::max() - (rng() % 4);
    case 2: return static_cast<int64_t>(rng() % 600) - 100;
    default: return pick(kInts, rng);
  }
}

Json random_value(Rng& rng, int depth = 0) {
  switch (rng() % (depth > 2 ? 5 : 8)) {
    case 0: return nullptr;
    case 1: return (rng() & 1) != 0;
    case 2: return random_number(rng);
    case 3: return pick(kStrings, rng);
    case 4: return std::string(rng() % 40, static_cast<char>('a' + rng() % 26));
    case 5: return Json::array({random_value(rng, depth + 1)});
    case 6: return Json::object({{pick(kKeys, rng), random_value(rng, depth + 1)}});
    default: return Json::array({{{"role", pick(kStrings, rng)}, {"content", random_value(rng, depth + 1)}}});
  }
}

void collect(Json& j, std::vector<Json*>* nodes) {
  nodes->push_back(&j);
  if (j.is_structured()) {
    for (auto& child : j) collect(child, nodes);
  }
}

void mutate_node(Json& node, Rng& rng) {
  const unsigned op = rng() % 6;
  if (op == 0 || !node.is_structured()) {
    node = random_value(rng);
  } else if (op == 1) {
    node = node.is_array() ? Json::array() : Json::object();
  } else if (node.is_object()) {
    if (op <= 3 || node.empty()) {
      node[pick(kKeys, rng)] = random_value(rng);
    } else {
      auto it = node.begin();
      std::advance(it, static_cast<long>(rng() % node.size()));
      node.erase(it);
    }
  } else if (op <= 3 || node.empty()) {
    node.push_back(node.empty() || rng() % 2 ? random_value(rng) : Json(node[rng() % node.size()]));
  } else {
    node.erase(rng() % node.size());
  }
}

}  // namespace

size_t mutate_json(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  Rng rng(seed);
  Json j = Json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || rng() % 8 == 0) return LLVMFuzzerMutate(data, size, max_size);
  const unsigned rounds = 1 + rng() % 3;
  for (unsigned r = 0; r < rounds; ++r) {
    std::vector<Json*> nodes;
    collect(j, &nodes);
    mutate_node(*nodes[rng() % nodes.size()], rng);
  }
  const std::string out = j.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (out.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}

}  // namespace llms::fuzz
