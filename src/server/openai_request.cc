#include "server/openai_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>

namespace llms {
namespace {

// obj[key] when it is a string, else "". Json::value() would throw for another type.
std::string string_or_empty(const Json& obj, const char* key) {
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Fields this server does not implement whose value would change what the answer
// means (docs/api.md, "Unknown fields"): refused with a 400 naming the field when set
// to anything but null or their neutral values, so that a client never silently gets
// something other than what it asked for. Fields not listed and not known are ignored.
struct UnsupportedField {
  const char* key;
  std::initializer_list<const char*> neutral;  // JSON texts of the values that change nothing
};

constexpr const char* kEmptyList = "[]";
constexpr const char* kEmptyObject = "{}";

const std::initializer_list<UnsupportedField>& unsupported_fields() {
  static const std::initializer_list<UnsupportedField> fields = {
      // OpenAI.
      {"functions", {kEmptyList}}, {"function_call", {"\"\"", "\"none\""}}, {"suffix", {"\"\""}},
      {"prediction", {}}, {"audio", {}}, {"modalities", {kEmptyList, "[\"text\"]"}}, {"web_search_options", {}},
      // vLLM's chat templating beyond chat_template_kwargs and continue_final_message (vLLM's
      // structured outputs are honoured too: structured_outputs.h).
      {"chat_template", {}},
      // vLLM's sampling extensions.
      {"min_tokens", {"0"}}, {"stop_token_ids", {kEmptyList}}, {"bad_words", {kEmptyList}},
      {"allowed_token_ids", {}}, {"prompt_logprobs", {}}, {"use_beam_search", {"false"}}, {"length_penalty", {"1", "1.0"}},
      {"include_stop_str_in_output", {"false"}}, {"skip_special_tokens", {"true"}},
      {"spaces_between_special_tokens", {"true"}}, {"truncate_prompt_tokens", {}}, {"logits_processors", {kEmptyList}},
      {"return_tokens_as_token_ids", {"false"}}, {"documents", {kEmptyList}}, {"mm_processor_kwargs", {kEmptyObject}},
  };
  return fields;
}

std::optional<ApiError> refuse_unsupported(const Json& b, ApiKind kind) {
  for (const UnsupportedField& f : unsupported_fields()) {
    if (!has_field(b, f.key)) continue;
    const Json& v = b.at(f.key);
    if (std::any_of(f.neutral.begin(), f.neutral.end(), [&](const char* n) { return v == Json::parse(n); })) continue;
    return bad_request(fmt::format("'{}' is not supported by this server (docs/api.md, \"Unknown fields\")", f.key),
                       f.key);
  }
  int64_t best_of = 1;
  LLMS_API_TRY(read_int(b, "best_of", 1, kMaxChoices, &best_of));
  if (best_of != 1 && (!b.contains("n") || b.at("n") != best_of)) {
    return bad_request("'best_of' other than n is not supported", "best_of");
  }
  // The chat templating fields mean nothing to a completion: refused there as above.
  if (kind == ApiKind::kCompletion) {
    if (has_field(b, "chat_template_kwargs") && b.at("chat_template_kwargs") != Json::object()) {
      return bad_request("'chat_template_kwargs' applies to chat requests only", "chat_template_kwargs");
    }
    if (has_field(b, "continue_final_message") && b.at("continue_final_message") != false) {
      return bad_request("'continue_final_message' applies to chat requests only", "continue_final_message");
    }
  }
  return std::nullopt;
}

// {"type": "text" | "json_object" | "json_schema", "json_schema": {name, schema, strict, description}}.
std::optional<ApiError> read_response_format(const Json& b, OutputConstraint* out) {
  if (!has_field(b, "response_format")) return std::nullopt;
  const Json& rf = b.at("response_format");
  if (!rf.is_object() || !rf.contains("type") || !rf.at("type").is_string()) {
    return bad_request("'response_format' must be an object with a string 'type'", "response_format");
  }
  const std::string type = rf.at("type").get<std::string>();
  const char* allowed_keys = type == "json_schema" ? "type, json_schema" : "type";
  for (const auto& [k, v] : rf.items()) {
    if (k != "type" && !(type == "json_schema" && k == "json_schema")) {
      return bad_request(fmt::format("'response_format.{}' is not supported (fields: {})", k, allowed_keys),
                         "response_format");
    }
  }
  if (type == "text") return std::nullopt;
  out->param = "response_format";
  if (type == "json_object") {
    out->kind = ConstraintKind::kJsonObject;
    return std::nullopt;
  }
  if (type != "json_schema") {
    return bad_request(fmt::format("'response_format.type' must be text, json_object or json_schema, got '{}'", type),
                       "response_format");
  }
  if (!rf.contains("json_schema") || !rf.at("json_schema").is_object()) {
    return bad_request("'response_format.json_schema' must be an object", "response_format");
  }
  const Json& js = rf.at("json_schema");
  for (const auto& [k, v] : js.items()) {
    if (k != "name" && k != "schema" && k != "strict" && k != "description") {
      return bad_request(fmt::format("'response_format.json_schema.{}' is not supported (fields: name, schema, strict, "
                                     "description)",
                                     k),
                         "response_format");
    }
  }
  if (!js.contains("name") || !js.at("name").is_string() || js.at("name").get<std::string>().empty()) {
    return bad_request("'response_format.json_schema.name' is required (a non-empty string)", "response_format");
  }
  if (js.contains("strict") && !js.at("strict").is_boolean() && !js.at("strict").is_null()) {
    return bad_request("'response_format.json_schema.strict' must be a boolean", "response_format");
  }
  out->kind = ConstraintKind::kJsonSchema;
  // No schema: any JSON value, as an empty schema allows.
  out->schema = js.contains("schema") && !js.at("schema").is_null() ? js.at("schema") : Json::object();
  return std::nullopt;
}

// The llama-server "grammar" (GBNF) and vLLM-style "regex" extensions and vLLM's
// structured-output fields, one constraint at most per request.
std::optional<ApiError> read_constraint(const Json& b, OutputConstraint* out) {
  LLMS_API_TRY(read_response_format(b, out));
  for (const char* key : {"grammar", "regex"}) {
    if (!has_field(b, key)) continue;
    if (!b.at(key).is_string() || b.at(key).get<std::string>().empty()) {
      return bad_request(fmt::format("'{}' must be a non-empty string", key), key);
    }
    if (out->kind != ConstraintKind::kNone) {
      return bad_request(fmt::format("'{}' cannot be combined with '{}'", key, out->param), key);
    }
    out->kind = std::string_view(key) == "grammar" ? ConstraintKind::kGbnf : ConstraintKind::kRegex;
    out->text = b.at(key).get<std::string>();
    out->param = key;
  }
  LLMS_API_TRY(read_vllm_constraint(b, out));
  // Extension: "json_whitespace": "bounded" (default) | "compact".
  std::string ws;
  LLMS_API_TRY(read_string(b, "json_whitespace", &ws));
  if (ws == "compact") {
    out->whitespace = JsonWhitespace::kCompact;
  } else if (!ws.empty() && ws != "bounded") {
    return bad_request("'json_whitespace' must be \"bounded\" or \"compact\"", "json_whitespace");
  }
  return std::nullopt;
}

// The engine's rule for sampling values (SamplingParams::check) as a 400 naming the
// parameter: this parser checks types, the engine's rule the ranges.
std::optional<ApiError> check_sampling(const SamplingParams& sp) {
  if (auto e = sp.check()) return bad_request(e->message, e->param);
  return std::nullopt;
}

// {"token id": bias, ...}; ids are checked against the vocabulary once the model is known.
std::optional<ApiError> read_logit_bias(const Json& b, SamplingParams* sp) {
  if (!has_field(b, "logit_bias")) return std::nullopt;
  const Json& lb = b.at("logit_bias");
  if (!lb.is_object()) return bad_request("'logit_bias' must be an object of token ids to biases", "logit_bias");
  if (lb.size() > static_cast<size_t>(kMaxLogitBias)) {
    return bad_request(fmt::format("'logit_bias' has {} entries; at most {} are allowed", lb.size(), kMaxLogitBias),
                       "logit_bias");
  }
  for (const auto& [key, v] : lb.items()) {
    int64_t id = -1;
    const bool digits = !key.empty() && key.size() <= 9 && key.find_first_not_of("0123456789") == std::string::npos;
    if (digits) id = std::stoll(key);
    if (id < 0) return bad_request(fmt::format("'logit_bias' keys must be token ids, got '{}'", key), "logit_bias");
    if (!v.is_number() || !std::isfinite(v.get<double>())) {
      return bad_request(fmt::format("'logit_bias' values must be numbers (token {})", key), "logit_bias");
    }
    sp->logit_bias.emplace_back(static_cast<int32_t>(id), static_cast<float>(v.get<double>()));
  }
  return check_sampling(*sp);
}

std::optional<ApiError> read_stop(const Json& b, std::vector<std::string>* out) {
  if (!has_field(b, "stop")) return std::nullopt;
  const Json& v = b.at("stop");
  std::vector<std::string> stops;
  if (v.is_string()) {
    stops.push_back(v.get<std::string>());
  } else if (v.is_array()) {
    for (const Json& s : v) {
      if (!s.is_string()) return bad_request("'stop' must be a string or a list of strings", "stop");
      stops.push_back(s.get<std::string>());
    }
  } else {
    return bad_request("'stop' must be a string or a list of strings", "stop");
  }
  if (stops.size() > static_cast<size_t>(kMaxStopStrings)) {
    return bad_request(fmt::format("'stop' has {} strings; at most {} are allowed", stops.size(), kMaxStopStrings), "stop");
  }
  for (const auto& s : stops) {
    if (s.empty()) return bad_request("'stop' strings must not be empty", "stop");
  }
  *out = std::move(stops);
  return std::nullopt;
}

std::optional<ApiError> read_sampling(const Json& b, SamplingParams* sp) {
  // Any finite number here (a float holds it, or the rule refuses its infinity).
  auto read_float = [&](const char* key, float* out) -> std::optional<ApiError> {
    double x = *out;
    LLMS_API_TRY(read_number(b, key, -std::numeric_limits<double>::max(), std::numeric_limits<double>::max(), &x));
    *out = static_cast<float>(x);
    return std::nullopt;
  };
  LLMS_API_TRY(read_float("temperature", &sp->temperature));
  LLMS_API_TRY(read_float("top_p", &sp->top_p));
  int64_t k = 0;
  LLMS_API_TRY(read_int(b, "top_k", INT32_MIN, INT32_MAX, &k));
  sp->top_k = k == -1 ? 0 : static_cast<int>(k);  // -1 and 0 both mean off (vLLM, llama.cpp)
  LLMS_API_TRY(read_float("min_p", &sp->min_p));
  LLMS_API_TRY(read_float("presence_penalty", &sp->presence_penalty));
  LLMS_API_TRY(read_float("frequency_penalty", &sp->frequency_penalty));
  LLMS_API_TRY(read_float("repetition_penalty", &sp->repetition_penalty));
  if (has_field(b, "seed")) {
    int64_t seed = 0;
    LLMS_API_TRY(read_int(b, "seed", INT64_MIN, INT64_MAX, &seed));
    sp->seed = static_cast<uint64_t>(seed);
  }
  return check_sampling(*sp);
}

std::optional<ApiError> read_logprobs(const Json& b, ApiKind kind, CompletionRequest* r) {
  if (kind == ApiKind::kCompletion) {
    int64_t lp = -1;
    LLMS_API_TRY(read_int(b, "logprobs", 0, kMaxLogprobs, &lp));
    if (lp >= 0) {
      r->logprobs = true;
      r->top_logprobs = static_cast<int>(lp);
    }
    if (has_field(b, "top_logprobs")) return bad_request("'top_logprobs' is a chat parameter; use 'logprobs'", "top_logprobs");
    return std::nullopt;
  }
  LLMS_API_TRY(read_bool(b, "logprobs", &r->logprobs));
  int64_t top = 0;
  LLMS_API_TRY(read_int(b, "top_logprobs", 0, kMaxLogprobs, &top));
  if (has_field(b, "top_logprobs") && !r->logprobs) {
    return bad_request("'top_logprobs' needs 'logprobs': true", "top_logprobs");
  }
  r->top_logprobs = static_cast<int>(top);
  return std::nullopt;
}

std::optional<ApiError> read_stream(const Json& b, CompletionRequest* r) {
  LLMS_API_TRY(read_bool(b, "stream", &r->stream));
  if (!has_field(b, "stream_options")) return std::nullopt;
  const Json& so = b.at("stream_options");
  if (!so.is_object()) return bad_request("'stream_options' must be an object", "stream_options");
  if (!r->stream) return bad_request("'stream_options' is only allowed with 'stream': true", "stream_options");
  if (auto e = read_bool(so, "include_usage", &r->include_usage)) {
    e->param = "stream_options.include_usage";
    return e;
  }
  return std::nullopt;
}

// "slo": {"ttft_ms": N, "itl_ms": N}: this request's latency targets (engine/slo.h).
std::optional<ApiError> read_slo(const Json& b, SloTarget* out) {
  if (!has_field(b, "slo")) return std::nullopt;
  const Json& slo = b.at("slo");
  if (!slo.is_object()) return bad_request("'slo' must be an object with ttft_ms and/or itl_ms", "slo");
  for (auto it = slo.begin(); it != slo.end(); ++it) {
    if (it.key() != "ttft_ms" && it.key() != "itl_ms") {
      return bad_request(fmt::format("unknown field 'slo.{}' (ttft_ms, itl_ms)", it.key()), "slo");
    }
  }
  for (const auto& [key, field] : {std::pair{"ttft_ms", &out->ttft_ms}, {"itl_ms", &out->itl_ms}}) {
    if (auto e = read_number(slo, key, 0.0, 1e9, field)) {
      e->message = "slo: " + e->message;
      e->param = "slo";
      return e;
    }
  }
  if ((has_field(slo, "ttft_ms") && out->ttft_ms <= 0) || (has_field(slo, "itl_ms") && out->itl_ms <= 0)) {
    return bad_request("'slo' targets must be > 0 ms", "slo");
  }
  return std::nullopt;
}

std::optional<ApiError> read_extensions(const Json& b, CompletionRequest* r) {
  RequestParams& p = r->params;
  LLMS_API_TRY(read_bool(b, "ignore_eos", &p.ignore_eos));
  LLMS_API_TRY(read_bool(b, "speculative", &p.speculative));
  LLMS_API_TRY(read_bool(b, "early_exit", &p.early_exit));
  LLMS_API_TRY(read_string(b, "precision", &r->precision));
  if (has_field(b, "precision") && r->precision.empty()) {
    return bad_request("'precision' must be \"auto\" or a precision variant's name", "precision");
  }
  int64_t prio = 0;
  LLMS_API_TRY(read_int(b, "priority", -1000000, 1000000, &prio));
  p.priority = static_cast<int>(prio);
  double timeout = 0;
  LLMS_API_TRY(read_number(b, "timeout", 0.0, 1e7, &timeout));
  if (has_field(b, "timeout") && timeout <= 0) return bad_request("'timeout' must be > 0 seconds", "timeout");
  p.timeout_s = timeout;
  LLMS_API_TRY(read_slo(b, &p.slo));
  LLMS_API_TRY(read_string(b, "cache_salt", &r->cache_salt));
  if (has_field(b, "cache_salt") && r->cache_salt.empty()) {
    return bad_request("'cache_salt' must be a non-empty string", "cache_salt");
  }
  std::string lane;
  LLMS_API_TRY(read_string(b, "lane", &lane));
  if (lane == "batch") {
    p.lane = Lane::kBatch;
  } else if (!lane.empty() && lane != "interactive") {
    return bad_request("'lane' must be \"interactive\" or \"batch\"", "lane");
  }
  return std::nullopt;
}

std::optional<ApiError> token_list(const Json& arr, PromptSpec* out, const char* field) {
  out->is_tokens = true;
  for (const Json& t : arr) {
    if (!t.is_number_integer()) return bad_request(fmt::format("'{}' token lists must hold integers", field), field);
    out->tokens.push_back(t.get<int64_t>());
  }
  if (out->tokens.empty()) return bad_request(fmt::format("'{}' must not be empty", field), field);
  return std::nullopt;
}

std::optional<ApiError> message_content(const Json& content, std::string* out) {
  if (content.is_null()) return std::nullopt;
  if (content.is_string()) {
    *out = content.get<std::string>();
    return std::nullopt;
  }
  if (!content.is_array()) return bad_request("message 'content' must be a string or a list of parts", "messages");
  for (const Json& part : content) {
    if (!part.is_object() || string_or_empty(part, "type") != "text" || !part.contains("text") || !part.at("text").is_string()) {
      return bad_request("only text content parts ({\"type\": \"text\", \"text\": ...}) are supported", "messages");
    }
    *out += part.at("text").get<std::string>();
  }
  return std::nullopt;
}

// add_generation_prompt, continue_final_message (vLLM's rule: not both; given alone it
// turns the generation prompt off) and chat_template_kwargs.
std::optional<ApiError> read_chat_template_options(const Json& b, CompletionRequest* r) {
  LLMS_API_TRY(read_bool(b, "continue_final_message", &r->continue_final_message));
  if (r->continue_final_message) r->add_generation_prompt = false;
  LLMS_API_TRY(read_bool(b, "add_generation_prompt", &r->add_generation_prompt));
  if (r->continue_final_message && r->add_generation_prompt) {
    return bad_request("continue_final_message and add_generation_prompt cannot both be true",
                       "continue_final_message");
  }
  if (has_field(b, "chat_template_kwargs")) {
    if (!b.at("chat_template_kwargs").is_object()) {
      return bad_request("'chat_template_kwargs' must be an object", "chat_template_kwargs");
    }
    r->chat_template_kwargs = b.at("chat_template_kwargs");
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_prompts(const Json& body, std::vector<PromptSpec>* out, const char* field) {
  if (!has_field(body, field)) return bad_request(fmt::format("'{}' is required", field), field);
  const Json& p = body.at(field);
  out->clear();
  auto text = [](const Json& s) { return PromptSpec{false, s.get<std::string>(), {}}; };
  if (p.is_string()) {
    out->push_back(text(p));
    return std::nullopt;
  }
  if (!p.is_array() || p.empty()) {
    return bad_request(fmt::format("'{}' must be a string, a list of strings, or token ids", field), field);
  }
  if (p.front().is_number_integer()) {
    PromptSpec spec;
    LLMS_API_TRY(token_list(p, &spec, field));
    out->push_back(std::move(spec));
    return std::nullopt;
  }
  for (const Json& item : p) {
    if (item.is_string()) {
      out->push_back(text(item));
    } else if (item.is_array()) {
      PromptSpec spec;
      LLMS_API_TRY(token_list(item, &spec, field));
      out->push_back(std::move(spec));
    } else {
      return bad_request(fmt::format("'{}' lists must hold strings or token id lists", field), field);
    }
  }
  return std::nullopt;
}

std::optional<ApiError> parse_messages(const Json& body, std::vector<ChatMessage>* out) {
  if (!has_field(body, "messages")) return bad_request("'messages' is required", "messages");
  const Json& messages = body.at("messages");
  if (!messages.is_array() || messages.empty()) return bad_request("'messages' must be a non-empty list", "messages");
  out->clear();
  for (const Json& m : messages) {
    if (!m.is_object() || !m.contains("role") || !m.at("role").is_string()) {
      return bad_request("each message must be an object with a string 'role'", "messages");
    }
    ChatMessage msg;
    msg.role = m.at("role").get<std::string>();
    if (msg.role == "developer") msg.role = "system";
    if (msg.role != "system" && msg.role != "user" && msg.role != "assistant" && msg.role != "tool") {
      return bad_request(fmt::format("unknown message role '{}'", msg.role), "messages");
    }
    msg.content_null = !m.contains("content") || m.at("content").is_null();
    LLMS_API_TRY(message_content(m.contains("content") ? m.at("content") : Json(nullptr), &msg.content));
    LLMS_API_TRY(parse_message_tool_calls(m, &msg));
    if (m.contains("name") && !m.at("name").is_null()) {
      if (!m.at("name").is_string()) return bad_request("message 'name' must be a string", "messages");
      msg.name = m.at("name").get<std::string>();
    }
    if (msg.role == "tool") {
      if (!m.contains("tool_call_id") || !m.at("tool_call_id").is_string()) {
        return bad_request("tool messages need a string 'tool_call_id'", "messages");
      }
      msg.tool_call_id = m.at("tool_call_id").get<std::string>();
    }
    out->push_back(std::move(msg));
  }
  return std::nullopt;
}

std::optional<ApiError> parse_completion_request(const Json& b, ApiKind kind, CompletionRequest* out) {
  CompletionRequest r;
  r.kind = kind;
  LLMS_API_TRY(read_string(b, "model", &r.model));
  LLMS_API_TRY(refuse_unsupported(b, kind));
  int64_t n = 1;
  LLMS_API_TRY(read_int(b, "n", 1, kMaxChoices, &n));
  r.n = static_cast<int>(n);
  LLMS_API_TRY(read_stream(b, &r));
  if (kind == ApiKind::kCompletion) {
    LLMS_API_TRY(read_bool(b, "echo", &r.echo));
    LLMS_API_TRY(read_bool(b, "split_special_tokens", &r.split_special_tokens));
  } else if (has_field(b, "echo")) {
    return bad_request("'echo' is a completions parameter", "echo");
  } else if (has_field(b, "split_special_tokens")) {
    return bad_request("'split_special_tokens' is a completions parameter (chat prompts always recognise control "
                       "tokens, see docs/api.md)", "split_special_tokens");
  }
  LLMS_API_TRY(read_logprobs(b, kind, &r));
  r.params.top_logprobs = r.logprobs ? r.top_logprobs : -1;
  int64_t max_tokens = 0;
  const char* mt_key = kind == ApiKind::kChat && has_field(b, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  // 0 with echo: score the prompt, generate nothing (lm-evaluation-harness log-likelihood).
  LLMS_API_TRY(read_int(b, mt_key, r.echo ? 0 : 1, 1 << 30, &max_tokens));
  if (has_field(b, mt_key)) r.max_tokens = max_tokens;
  r.params.sampling.temperature = 1.0f;
  LLMS_API_TRY(read_sampling(b, &r.params.sampling));
  LLMS_API_TRY(read_stop(b, &r.params.stop));
  LLMS_API_TRY(read_logit_bias(b, &r.params.sampling));
  LLMS_API_TRY(read_constraint(b, &r.constraint));
  LLMS_API_TRY(parse_tools(b, kind, &r.tools));
  if (r.tools.active() && r.logprobs) {
    return bad_request("'logprobs' together with tools is not supported", "logprobs");
  }
  if (r.tools.active() && r.constraint.kind != ConstraintKind::kNone) {
    return bad_request(fmt::format("'{}' cannot be combined with 'tools' unless tool_choice is none", r.constraint.param),
                       r.constraint.param);
  }
  std::string user;
  LLMS_API_TRY(read_string(b, "user", &user));  // accepted; carries no meaning here
  LLMS_API_TRY(read_extensions(b, &r));
  LLMS_API_TRY(read_bool(b, "review", &r.review));
  if (kind == ApiKind::kChat) LLMS_API_TRY(read_chat_template_options(b, &r));
  if (r.echo && r.logprobs && r.stream) {
    return bad_request("'echo' with 'logprobs' (prompt logprobs) is not supported with 'stream'", "echo");
  }
  // The engine scores the prompt for echo with logprobs, and for max_tokens 0 (where it
  // only runs the prompt).
  r.params.prompt_logprobs = r.echo && (r.logprobs || r.max_tokens == 0);
  if (r.params.prompt_logprobs) r.params.top_logprobs = std::max(r.params.top_logprobs, 0);
  if (kind == ApiKind::kChat) {
    LLMS_API_TRY(parse_messages(b, &r.messages));
    if (r.continue_final_message && r.messages.back().role != "assistant") {
      return bad_request("continue_final_message needs an assistant message last", "continue_final_message");
    }
  } else {
    LLMS_API_TRY(parse_prompts(b, &r.prompts));
  }
  *out = std::move(r);
  return std::nullopt;
}

}  // namespace llms
