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

// State of one stream while it arrives.
struct StreamState {
  RequestOutcome out;
  int64_t send_ns = 0, last_ns = 0;
  int text_chunks = 0;
  bool done = false;
  std::string error, raw;

  void on_event(const std::string& data) {
    const int64_t now = now_ns();
    if (data == "[DONE]") {
      done = true;
      return;
    }
    const Json j = Json::parse(data, nullptr, false);
    if (j.is_discarded()) {
      if (error.empty()) error = "an SSE event is not JSON: " + shorten(data);
      return;
    }
    if (j.contains("error")) {
      if (error.empty()) error = "error event: " + shorten(j["error"].dump());
      return;
    }
    if (j.contains("usage") && j["usage"].is_object()) {
      const Json& u = j["usage"];
      if (u.contains("completion_tokens") && u["completion_tokens"].is_number_integer()) {
        out.output_tokens = u["completion_tokens"].get<int>();
      }
      if (u.contains("prompt_tokens") && u["prompt_tokens"].is_number_integer()) {
        out.prompt_tokens = u["prompt_tokens"].get<int>();
      }
    }
    if (j.contains("timings") && j["timings"].is_object() && j["timings"].contains("prompt_ms") &&
        j["timings"]["prompt_ms"].is_number()) {
      out.server_prompt_ms = j["timings"]["prompt_ms"].get<double>();
    }
    if (chunk_text(j).empty()) return;
    if (text_chunks == 0) {
      out.ttft_s = seconds_between(send_ns, now);
    } else {
      out.itl_s.push_back(seconds_between(last_ns, now));
    }
    last_ns = now;
    ++text_chunks;
  }
};

}  // namespace

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
  http_->set_keep_alive(true);
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
  StreamState st;
  SseSplitter sse;
  httplib::Request req;
  req.method = "POST";
  req.path = spec.endpoint;
  req.body = request_body(spec);
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char* data, size_t len, uint64_t, uint64_t) {
    if (st.raw.size() < 4096) st.raw.append(data, std::min<size_t>(len, 4096));
    sse.feed(data, len, [&](const std::string& d) { st.on_event(d); });
    return true;
  };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  st.send_ns = now_ns();
  st.out.start_s = seconds_between(t0_ns, st.send_ns);
  const bool sent = http_->send(req, res, err);
  st.out.e2e_s = seconds_between(st.send_ns, now_ns());
  if (st.out.output_tokens == 0) st.out.output_tokens = st.text_chunks;
  if (!sent) {
    st.out.error = fmt::format("{}: {}", spec.endpoint, httplib::to_string(err));
  } else if (res.status != 200) {
    st.out.error = fmt::format("HTTP {}: {}", res.status, shorten(st.raw.empty() ? res.body : st.raw));
  } else if (!st.error.empty()) {
    st.out.error = st.error;
  } else if (!st.done) {
    st.out.error = "the stream ended before [DONE]";
  }
  st.out.got_text = st.text_chunks > 0;
  st.out.ok = st.out.error.empty();
  return st.out;
}

}  // namespace llms::benchserve
