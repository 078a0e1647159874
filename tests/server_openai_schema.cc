#include "server_openai_schema.h"

#include <functional>
#include <map>
#include <set>

namespace llms::test {
namespace {

using Json = nlohmann::json;

enum class T { kString, kInt, kNumber, kBool, kObject, kArray, kNull };

bool is(const Json& v, T t) {
  switch (t) {
    case T::kString: return v.is_string();
    case T::kInt: return v.is_number_integer();
    case T::kNumber: return v.is_number();
    case T::kBool: return v.is_boolean();
    case T::kObject: return v.is_object();
    case T::kArray: return v.is_array();
    case T::kNull: return v.is_null();
  }
  return false;
}

struct Checker {
  Violations out;
  void fail(const std::string& path, const std::string& msg) { out.push_back(path + ": " + msg); }

  // `fields`: name → allowed types; `required`: names that must be present.
  bool object(const Json& j, const std::string& path, const std::map<std::string, std::vector<T>>& fields,
              const std::set<std::string>& required) {
    if (!j.is_object()) {
      fail(path, "not an object");
      return false;
    }
    for (const auto& r : required) {
      if (!j.contains(r)) fail(path, "missing required field '" + r + "'");
    }
    for (const auto& [k, v] : j.items()) {
      const auto it = fields.find(k);
      if (it == fields.end()) {
        fail(path, "unknown field '" + k + "'");
        continue;
      }
      bool ok = false;
      for (T t : it->second) ok = ok || is(v, t);
      if (!ok) fail(path + "." + k, "wrong type: " + v.dump());
    }
    return true;
  }

  void one_of(const Json& v, const std::string& path, const std::set<std::string>& values) {
    if (!v.is_string() || !values.count(v.get<std::string>())) fail(path, "unexpected value " + v.dump());
  }

  void usage(const Json& u, const std::string& path) {
    object(u, path,
           {{"prompt_tokens", {T::kInt}},
            {"completion_tokens", {T::kInt}},
            {"total_tokens", {T::kInt}},
            {"prompt_tokens_details", {T::kObject, T::kNull}},
            {"completion_tokens_details", {T::kObject, T::kNull}}},
           {"prompt_tokens", "completion_tokens", "total_tokens"});
    if (u.is_object() && u.value("total_tokens", -1) != u.value("prompt_tokens", 0) + u.value("completion_tokens", 0)) {
      fail(path, "total_tokens != prompt_tokens + completion_tokens");
    }
    if (u.contains("prompt_tokens_details") && u["prompt_tokens_details"].is_object()) {
      object(u["prompt_tokens_details"], path + ".prompt_tokens_details",
             {{"cached_tokens", {T::kInt}}, {"audio_tokens", {T::kInt}}}, {});
    }
  }

  void legacy_logprobs(const Json& lp, const std::string& path) {
    if (lp.is_null()) return;
    object(lp, path,
           {{"tokens", {T::kArray}}, {"token_logprobs", {T::kArray}}, {"top_logprobs", {T::kArray}},
            {"text_offset", {T::kArray}}},
           {});
    const size_t n = lp.value("tokens", Json::array()).size();
    for (const char* k : {"token_logprobs", "top_logprobs", "text_offset"}) {
      if (lp.contains(k) && lp[k].size() != n) fail(path + "." + k, "length differs from tokens");
    }
    for (const auto& t : lp.value("tokens", Json::array())) {
      if (!t.is_string()) fail(path + ".tokens", "not a string");
    }
    for (const auto& t : lp.value("token_logprobs", Json::array())) {
      if (!t.is_number() && !t.is_null()) fail(path + ".token_logprobs", "not a number");
    }
    for (const auto& t : lp.value("top_logprobs", Json::array())) {
      if (!t.is_object() && !t.is_null()) fail(path + ".top_logprobs", "not an object");
      if (t.is_object()) {
        for (const auto& [k, v] : t.items()) {
          if (!v.is_number()) fail(path + ".top_logprobs", "value of '" + k + "' not a number");
        }
      }
    }
    for (const auto& t : lp.value("text_offset", Json::array())) {
      if (!t.is_number_integer()) fail(path + ".text_offset", "not an integer");
    }
  }

  void chat_token(const Json& t, const std::string& path, bool with_top) {
    std::map<std::string, std::vector<T>> f = {{"token", {T::kString}}, {"logprob", {T::kNumber}}, {"bytes", {T::kArray, T::kNull}}};
    std::set<std::string> req = {"token", "logprob", "bytes"};
    if (with_top) {
      f["top_logprobs"] = {T::kArray};
      req.insert("top_logprobs");
    }
    object(t, path, f, req);
    if (t.contains("bytes") && t["bytes"].is_array()) {
      for (const auto& b : t["bytes"]) {
        if (!b.is_number_integer() || b.get<int>() < 0 || b.get<int>() > 255) fail(path + ".bytes", "not a byte");
      }
    }
    if (with_top && t.contains("top_logprobs")) {
      for (const auto& x : t["top_logprobs"]) chat_token(x, path + ".top_logprobs[]", false);
    }
  }

  void chat_logprobs(const Json& lp, const std::string& path) {
    if (lp.is_null()) return;
    object(lp, path, {{"content", {T::kArray, T::kNull}}, {"refusal", {T::kArray, T::kNull}}}, {"content"});
    if (lp.contains("content") && lp["content"].is_array()) {
      for (const auto& t : lp["content"]) chat_token(t, path + ".content[]", true);
    }
  }

  void header(const Json& j, const std::string& object_name) {
    if (!j.is_object()) return;
    if (j.value("object", "") != object_name) fail("object", "expected '" + object_name + "'");
    if (!j.value("id", std::string()).size()) fail("id", "empty");
    if (j.value("created", int64_t{0}) <= 0) fail("created", "not a positive unix time");
  }
};

const std::set<std::string> kFinish = {"stop", "length", "tool_calls", "content_filter", "function_call", "timeout",
                                       "cancelled"};

std::map<std::string, std::vector<T>> top_fields(bool chunk) {
  return {{"id", {T::kString}},
          {"object", {T::kString}},
          {"created", {T::kInt}},
          {"model", {T::kString}},
          {"choices", {T::kArray}},
          {"system_fingerprint", {T::kString, T::kNull}},
          {"service_tier", {T::kString, T::kNull}},
          {"usage", chunk ? std::vector<T>{T::kObject, T::kNull} : std::vector<T>{T::kObject}}};
}

}  // namespace

Violations check_completion(const Json& j) {
  Checker c;
  c.object(j, "$", top_fields(false), {"id", "object", "created", "model", "choices"});
  c.header(j, "text_completion");
  for (const auto& ch : j.value("choices", Json::array())) {
    c.object(ch, "choices[]", {{"text", {T::kString}}, {"index", {T::kInt}}, {"logprobs", {T::kObject, T::kNull}},
                               {"finish_reason", {T::kString}}},
             {"text", "index", "logprobs", "finish_reason"});
    if (ch.contains("finish_reason")) c.one_of(ch["finish_reason"], "choices[].finish_reason", kFinish);
    if (ch.contains("logprobs")) c.legacy_logprobs(ch["logprobs"], "choices[].logprobs");
  }
  if (j.contains("usage")) c.usage(j["usage"], "usage");
  return c.out;
}

Violations check_completion_chunk(const Json& j) {
  Checker c;
  c.object(j, "$", top_fields(true), {"id", "object", "created", "model", "choices"});
  c.header(j, "text_completion");
  for (const auto& ch : j.value("choices", Json::array())) {
    c.object(ch, "choices[]", {{"text", {T::kString}}, {"index", {T::kInt}}, {"logprobs", {T::kObject, T::kNull}},
                               {"finish_reason", {T::kString, T::kNull}}},
             {"text", "index", "finish_reason"});
    if (ch.contains("finish_reason") && !ch["finish_reason"].is_null()) {
      c.one_of(ch["finish_reason"], "choices[].finish_reason", kFinish);
    }
    if (ch.contains("logprobs")) c.legacy_logprobs(ch["logprobs"], "choices[].logprobs");
  }
  if (j.contains("usage") && j["usage"].is_object()) c.usage(j["usage"], "usage");
  return c.out;
}

Violations check_chat_completion(const Json& j) {
  Checker c;
  c.object(j, "$", top_fields(false), {"id", "object", "created", "model", "choices", "usage"});
  c.header(j, "chat.completion");
  for (const auto& ch : j.value("choices", Json::array())) {
    c.object(ch, "choices[]", {{"index", {T::kInt}}, {"message", {T::kObject}}, {"logprobs", {T::kObject, T::kNull}},
                               {"finish_reason", {T::kString}}},
             {"index", "message", "finish_reason", "logprobs"});
    if (ch.contains("finish_reason")) c.one_of(ch["finish_reason"], "choices[].finish_reason", kFinish);
    if (ch.contains("message")) {
      c.object(ch["message"], "choices[].message",
               {{"role", {T::kString}}, {"content", {T::kString, T::kNull}}, {"refusal", {T::kString, T::kNull}},
                {"tool_calls", {T::kArray}}, {"annotations", {T::kArray}}, {"audio", {T::kObject, T::kNull}}},
               {"role", "content"});
      if (ch["message"].value("role", "") != "assistant") c.fail("choices[].message.role", "not 'assistant'");
    }
    if (ch.contains("logprobs")) c.chat_logprobs(ch["logprobs"], "choices[].logprobs");
  }
  if (j.contains("usage")) c.usage(j["usage"], "usage");
  return c.out;
}

Violations check_chat_chunk(const Json& j) {
  Checker c;
  c.object(j, "$", top_fields(true), {"id", "object", "created", "model", "choices"});
  c.header(j, "chat.completion.chunk");
  for (const auto& ch : j.value("choices", Json::array())) {
    c.object(ch, "choices[]", {{"index", {T::kInt}}, {"delta", {T::kObject}}, {"logprobs", {T::kObject, T::kNull}},
                               {"finish_reason", {T::kString, T::kNull}}},
             {"index", "delta", "finish_reason"});
    if (ch.contains("finish_reason") && !ch["finish_reason"].is_null()) {
      c.one_of(ch["finish_reason"], "choices[].finish_reason", kFinish);
    }
    if (ch.contains("delta")) {
      c.object(ch["delta"], "choices[].delta",
               {{"role", {T::kString}}, {"content", {T::kString, T::kNull}}, {"refusal", {T::kString, T::kNull}},
                {"tool_calls", {T::kArray}}},
               {});
    }
    if (ch.contains("logprobs")) c.chat_logprobs(ch["logprobs"], "choices[].logprobs");
  }
  if (j.contains("usage") && j["usage"].is_object()) c.usage(j["usage"], "usage");
  return c.out;
}

Violations check_error(const Json& j) {
  Checker c;
  c.object(j, "$", {{"error", {T::kObject}}}, {"error"});
  if (j.contains("error")) {
    c.object(j["error"], "error",
             {{"message", {T::kString}}, {"type", {T::kString}}, {"param", {T::kString, T::kNull}},
              {"code", {T::kString, T::kNull}}},
             {"message", "type", "param", "code"});
  }
  return c.out;
}

Violations check_model(const Json& j) {
  Checker c;
  // max_model_len is vLLM's field; version is llmserve's.
  c.object(j, "$",
           {{"id", {T::kString}},
            {"object", {T::kString}},
            {"created", {T::kInt}},
            {"owned_by", {T::kString}},
            {"max_model_len", {T::kInt}},
            {"version", {T::kString}}},
           {"id", "object", "created", "owned_by"});
  if (j.value("object", "") != "model") c.fail("object", "expected 'model'");
  return c.out;
}

Violations check_model_list(const Json& j) {
  Checker c;
  c.object(j, "$", {{"object", {T::kString}}, {"data", {T::kArray}}}, {"object", "data"});
  if (j.value("object", "") != "list") c.fail("object", "expected 'list'");
  Violations out = c.out;
  for (const auto& m : j.value("data", Json::array())) {
    for (auto& v : check_model(m)) out.push_back("data[]." + v);
  }
  return out;
}

}  // namespace llms::test
