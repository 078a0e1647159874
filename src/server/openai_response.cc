#include "server/openai_response.h"

#include <algorithm>

namespace llms {
namespace {

const char* object_name(ApiKind kind, bool chunk) {
  if (kind == ApiKind::kChat) return chunk ? "chat.completion.chunk" : "chat.completion";
  return "text_completion";
}

Json meta_json(const ResponseMeta& m, bool chunk) {
  return Json{{"id", m.id}, {"object", object_name(m.kind, chunk)}, {"created", m.created}, {"model", m.model},
              {"system_fingerprint", m.fingerprint.empty() ? Json(nullptr) : Json(m.fingerprint)}};
}

Json byte_list(const std::string& s) {
  Json b = Json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

Json chat_token(const Tokenizer& tok, int32_t id, float logprob) {
  const std::string piece = tok.token_to_piece(id);
  return Json{{"token", piece}, {"logprob", logprob}, {"bytes", byte_list(piece)}};
}

}  // namespace

const char* api_finish_reason(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kTimeout: return "timeout";
    case FinishReason::kCancelled: return "cancelled";
    default: return "error";
  }
}

Json usage_json(const UsageTotals& u) {
  return Json{{"prompt_tokens", u.prompt_tokens},
              {"completion_tokens", u.completion_tokens},
              {"total_tokens", u.prompt_tokens + u.completion_tokens},
              {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

Json logprobs_json(ApiKind kind, const Tokenizer& tok, const std::vector<TokenLogprobs>& entries) {
  if (kind == ApiKind::kChat) {
    Json content = Json::array();
    for (const auto& e : entries) {
      Json item = chat_token(tok, e.token, e.logprob);
      Json top = Json::array();
      for (const auto& t : e.top) top.push_back(chat_token(tok, t.token, t.logprob));
      item["top_logprobs"] = std::move(top);
      content.push_back(std::move(item));
    }
    return Json{{"content", std::move(content)}, {"refusal", nullptr}};
  }
  Json tokens = Json::array(), lps = Json::array(), tops = Json::array(), offsets = Json::array();
  for (const auto& e : entries) {
    tokens.push_back(tok.token_to_piece(e.token));
    offsets.push_back(e.text_offset);
    if (!e.scored) {
      lps.push_back(nullptr);
      tops.push_back(nullptr);
      continue;
    }
    lps.push_back(e.logprob);
    Json top = Json::object();
    for (const auto& t : e.top) {
      const std::string piece = tok.token_to_piece(t.token);
      if (!top.contains(piece)) top[piece] = t.logprob;  // two ids may share a piece: keep the likelier
    }
    tops.push_back(std::move(top));
  }
  return Json{{"tokens", std::move(tokens)}, {"token_logprobs", std::move(lps)}, {"top_logprobs", std::move(tops)},
              {"text_offset", std::move(offsets)}};
}

int64_t choice_bytes_bound(int64_t max_tokens, int top_logprobs, size_t max_piece_bytes, size_t prefix_bytes) {
  // Per token: its text escaped, plus room for tool-call ids and names (48 bytes).
  // Per logprob entry (chat's is the larger): the token escaped, its "bytes" array (4
  // bytes per byte), keys, a float and punctuation (96 bytes).
  constexpr int64_t kEscape = 6, kPerToken = 48, kPerChoice = 512, kPerEntry = 96, kBytesArray = 4;
  const auto L = static_cast<int64_t>(max_piece_bytes);
  int64_t per_token = kEscape * L + kPerToken;
  if (top_logprobs >= 0) per_token += (top_logprobs + 1) * ((kEscape + kBytesArray) * L + kPerEntry);
  return kPerChoice + kEscape * static_cast<int64_t>(prefix_bytes) + std::max<int64_t>(0, max_tokens) * per_token;
}

Json tool_call_json(const ToolCallResult& c) {
  return Json{{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}};
}

Json whole_response(const ResponseMeta& meta, const Tokenizer& tok, const std::vector<ChoiceResult>& choices,
                    const UsageTotals& usage) {
  Json out = meta_json(meta, false);
  Json list = Json::array();
  for (const auto& c : choices) {
    Json lp = c.with_logprobs ? logprobs_json(meta.kind, tok, c.logprobs) : Json(nullptr);
    if (meta.kind == ApiKind::kChat) {
      const bool calls = !c.tool_calls.empty();
      Json msg = {{"role", "assistant"}, {"content", calls && c.text.empty() ? Json(nullptr) : Json(c.text)},
                  {"refusal", nullptr}};
      if (!c.reasoning.empty()) msg["reasoning_content"] = c.reasoning;
      if (calls) {
        msg["tool_calls"] = Json::array();
        for (const auto& t : c.tool_calls) msg["tool_calls"].push_back(tool_call_json(t));
      }
      const char* finish = calls && c.finish == FinishReason::kStop ? kToolCallsFinish : api_finish_reason(c.finish);
      list.push_back({{"index", c.index}, {"message", std::move(msg)}, {"logprobs", std::move(lp)},
                      {"finish_reason", finish}});
    } else {
      list.push_back({{"index", c.index}, {"text", c.text}, {"logprobs", std::move(lp)},
                      {"finish_reason", api_finish_reason(c.finish)}});
    }
  }
  out["choices"] = std::move(list);
  out["usage"] = usage_json(usage);
  return out;
}

Json stream_chunk(const ResponseMeta& meta, const StreamChunk& c) {
  Json out = meta_json(meta, true);
  Json choice = {{"index", c.index}};
  if (meta.kind == ApiKind::kChat) {
    Json delta = Json::object();
    if (c.role) delta["role"] = "assistant";
    if (c.reasoning) delta["reasoning_content"] = *c.reasoning;
    if (c.text) delta["content"] = *c.text;
    if (!c.tool_calls.is_null()) delta["tool_calls"] = c.tool_calls;
    choice["delta"] = std::move(delta);
  } else {
    choice["text"] = c.text.value_or(std::string_view());
  }
  choice["logprobs"] = c.logprobs;
  choice["finish_reason"] = c.finish ? Json(c.finish) : Json(nullptr);
  out["choices"] = Json::array({std::move(choice)});
  if (c.usage_null) out["usage"] = nullptr;
  return out;
}

Json usage_chunk(const ResponseMeta& meta, const UsageTotals& usage) {
  Json out = meta_json(meta, true);
  out["choices"] = Json::array();
  out["usage"] = usage_json(usage);
  return out;
}

}  // namespace llms
