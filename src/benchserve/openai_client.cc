#include "benchserve/openai_client.h"

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "base/clock.h"

namespace llms::benchserve {

namespace {

using Json = nlohmann::json;

double seconds_between(int64_t from_ns, int64_t to_ns) { return static_cast<double>(to_ns - from_ns) * 1e-9; }

std::string shorten(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  if (s.size() > 300) s = s.substr(0, 300) + "...";
  return s;
}

// The text of a chunk's first choice (completions: text; chat: delta.content).
std::string chunk_text(const Json& chunk) {
  if (!chunk.contains("choices") || !chunk["choices"].is_array() || chunk["choices"].empty()) return "";
  const Json& c = chunk["choices"][0];
  if (c.contains("text") && c["text"].is_string()) return c["text"].get<std::string>();
  if (c.contains("delta") && c["delta"].is_object()) {
    const Json& d = c["delta"];
    if (d.contains("content") && d["content"].is_string()) return d["content"].get<std::string>();
  }
  return "";
}

// Whether a chunk's first choice is a token that renders as no text: a text or delta
// content string, no finish_reason, no role.
bool empty_token_chunk(const Json& chunk) {
  if (!chunk.contains("choices") || !chunk["choices"].is_array() || chunk["choices"].empty()) return false;
  const Json& c = chunk["choices"][0];
  if (!c.is_object() || (c.contains("finish_reason") && !c["finish_reason"].is_null())) return false;
  if (c.contains("text")) return c["text"].is_string();
  if (!c.contains("delta") || !c["delta"].is_object()) return false;
  const Json& d = c["delta"];
  return !d.contains("role") && d.contains("content") && d["content"].is_string();
}

}  // namespace

void StreamTimer::Chunks::add(int64_t now_ns) {
  if (count == 0) {
    first_ns = now_ns;
  } else {
    gaps_s.push_back(seconds_between(last_ns, now_ns));
  }
  last_ns = now_ns;
  ++count;
}

void StreamTimer::on_event(const std::string& data, int64_t now_ns) {
  if (data == "[DONE]") {
    done_ = true;
    return;
  }
  const Json j = Json::parse(data, nullptr, false);
  if (j.is_discarded()) {
    if (error_.empty()) error_ = "an SSE event is not JSON: " + shorten(data);
    return;
  }
  if (j.contains("error")) {
    if (error_.empty()) error_ = "error event: " + shorten(j["error"].dump());
    return;
  }
  if (j.contains("usage") && j["usage"].is_object()) {
    const Json& u = j["usage"];
    if (u.contains("completion_tokens") && u["completion_tokens"].is_number_integer()) {
      out_.output_tokens = u["completion_tokens"].get<int>();
    }
    if (u.contains("prompt_tokens") && u["prompt_tokens"].is_number_integer()) {
      out_.prompt_tokens = u["prompt_tokens"].get<int>();
    }
  }
  if (j.contains("timings") && j["timings"].is_object() && j["timings"].contains("prompt_ms") &&
      j["timings"]["prompt_ms"].is_number()) {
    out_.server_prompt_ms = j["timings"]["prompt_ms"].get<double>();
  }
  if (!chunk_text(j).empty()) {
    text_.add(now_ns);
  } else if (empty_token_chunk(j)) {
    empty_.add(now_ns);
  }
}

RequestOutcome StreamTimer::finish(int64_t end_ns) const {
  RequestOutcome out = out_;
  out.e2e_s = seconds_between(send_ns_, end_ns);
  // Text when there is any; else the empty token chunks of a server that reports tokens.
  const bool by_empty = text_.count == 0 && empty_.count > 0 && out.output_tokens > 0;
  const Chunks& used = by_empty ? empty_ : text_;
  if (out.output_tokens == 0) out.output_tokens = text_.count;
  out.got_text = used.count > 0;
  if (used.count > 0) {
    out.ttft_s = seconds_between(send_ns_, used.first_ns);
    out.itl_s = used.gaps_s;
  }
  return out;
}

double RequestOutcome::tpot_s() const {
  return output_tokens > 1 ? (e2e_s - ttft_s) / static_cast<double>(output_tokens - 1) : 0.0;
}

std::string request_body(const RequestSpec& spec) {
  Json b = {{"max_tokens", spec.max_tokens},
            {"temperature", spec.temperature},
            {"stream", true},
            {"stream_options", {{"include_usage", true}}}};
  if (!spec.model.empty()) b["model"] = spec.model;  // "": the server's only model
  if (spec.ignore_eos) b["ignore_eos"] = true;
  if (spec.endpoint == "/v1/chat/completions") {
    b["messages"] = Json::array({{{"role", "user"}, {"content", spec.prompt}}});
  } else {
    b["prompt"] = spec.prompt;
  }
  return b.dump();
}

std::vector<std::string> SseSplitter::take_data() {
  // buf_ holds one event ending in a blank line; its data lines joined by '\n'.
  std::vector<std::string> out;
  std::string data;
  bool has_data = false;
  size_t pos = 0;
  while (pos < buf_.size()) {
    const size_t eol = buf_.find('\n', pos);
    const std::string line = buf_.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.rfind("data:", 0) != 0) continue;
    std::string v = line.substr(5);
    if (!v.empty() && v[0] == ' ') v.erase(0, 1);
    data += (has_data ? "\n" : "") + v;
    has_data = true;
  }
  buf_.clear();
  if (has_data) out.push_back(std::move(data));
  return out;
}

OpenAiClient::OpenAiClient(const std::string& base_url, const std::string& api_key, double timeout_s)
    : base_url_(base_url), api_key_(api_key), http_(std::make_unique<httplib::Client>(base_url)) {
  const auto secs = static_cast<time_t>(timeout_s);
  http_->set_connection_timeout(10, 0);
  http_->set_read_timeout(secs, 0);
  http_->set_write_timeout(secs, 0);
  // A connection per request, as vLLM's benchmark client opens one: reusing a
  // keep-alive connection lost 2-3 of 64 requests to read errors against llama-server
  // (32 streams, 64 tokens each), none on fresh connections.
  http_->set_keep_alive(false);
  // Headers and body go out in separate writes: without this, Nagle holds the body
  // until the server acknowledges the headers (a delayed ACK, up to 40 ms, in every TTFT).
  http_->set_tcp_nodelay(true);
  if (!api_key.empty()) http_->set_bearer_token_auth(api_key);
}

OpenAiClient::~OpenAiClient() = default;

Result<std::string> OpenAiClient::get(const std::string& path) {
  if (!http_->is_valid()) return invalid_argument(fmt::format("--base-url '{}' is not http://HOST:PORT", base_url_));
  auto r = http_->Get(path);
  if (!r) return unavailable(fmt::format("cannot reach {}{}: {}", base_url_, path, httplib::to_string(r.error())));
  if (r->status != 200) {
    return unavailable(fmt::format("GET {}{} answered {}: {}", base_url_, path, r->status, shorten(r->body)));
  }
  return r->body;
}

Result<std::string> OpenAiClient::first_model() {
  LLMS_ASSIGN_OR_RETURN(const std::string body, get("/v1/models"));
  const Json j = Json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("data") && j["data"].is_array() && !j["data"].empty() &&
      j["data"][0].contains("id") && j["data"][0]["id"].is_string()) {
    return j["data"][0]["id"].get<std::string>();
  }
  return unavailable(fmt::format("GET {}/v1/models lists no model; pass --model", base_url_));
}

RequestOutcome OpenAiClient::stream(const RequestSpec& spec, int64_t t0_ns) {
  httplib::Request req;
  req.method = "POST";
  req.path = spec.endpoint;
  req.body = request_body(spec);
  req.set_header("Content-Type", "application/json");
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  SseSplitter sse;
  std::string raw;
  const int64_t send_ns = now_ns();
  StreamTimer timer(send_ns);
  req.content_receiver = [&](const char* data, size_t len, uint64_t, uint64_t) {
    if (raw.size() < 4096) raw.append(data, std::min<size_t>(len, 4096));
    sse.feed(data, len, [&](const std::string& d) { timer.on_event(d, now_ns()); });
    return true;
  };
  const bool sent = http_->send(req, res, err);
  RequestOutcome out = timer.finish(now_ns());
  out.start_s = seconds_between(t0_ns, send_ns);
  if (!sent) {
    out.error = fmt::format("{}: {}", spec.endpoint, httplib::to_string(err));
  } else if (res.status != 200) {
    out.error = fmt::format("HTTP {}: {}", res.status, shorten(raw.empty() ? res.body : raw));
  } else if (!timer.error().empty()) {
    out.error = timer.error();
  } else if (!timer.done()) {
    out.error = "the stream ended before [DONE]";
  }
  out.ok = out.error.empty();
  return out;
}

}  // namespace llms::benchserve
