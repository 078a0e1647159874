// A client of one OpenAI-compatible server (llmserve, llama-server, vLLM) for the
// benchmark: the model list, /metrics, and streamed completions timed chunk by chunk.
// HTTP is cpp-httplib's; this file only splits the SSE stream into events.
//
// Thread-safety: an OpenAiClient opens a connection per request and is used by one
// thread at a time; make one per sending thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace httplib {
class Client;
}

namespace llms::benchserve {

// What the client measured of one streamed request. Times are seconds.
struct RequestOutcome {
  bool ok = false;
  std::string error;       // why it failed (HTTP status and body, an error event, a dropped stream)
  double start_s = 0;      // when it was sent, from the start of the run
  double ttft_s = 0;       // send to the first chunk carrying text (see StreamTimer)
  double e2e_s = 0;        // send to the end of the stream
  std::vector<double> itl_s;  // gaps between consecutive chunks carrying text (see StreamTimer)
  int output_tokens = 0;   // the server's usage.completion_tokens, else the chunks carrying text
  int prompt_tokens = -1;  // the server's usage.prompt_tokens; -1 when not reported
  bool got_text = false;   // false: the stream ended (e.g. at EOS) before any text; no TTFT
  double server_prompt_ms = -1;  // llama-server's own timings.prompt_ms (its prefill); -1 when absent
  // (e2e - ttft) / (output_tokens - 1), 0 with fewer than two tokens.
  double tpot_s() const;
};

struct RequestSpec {
  std::string endpoint;  // /v1/completions or /v1/chat/completions
  std::string model;
  std::string prompt;
  int max_tokens = 16;
  bool ignore_eos = false;
  double temperature = 0;
};

// The JSON body sent for `spec`: streaming, with usage in the last chunk.
std::string request_body(const RequestSpec& spec);

// Feeds the events of an SSE stream as its bytes arrive (any split): calls back with
// each event's data field ("[DONE]" included).
class SseSplitter {
 public:
  template <typename F>
  void feed(const char* data, size_t len, F&& on_data) {
    for (size_t i = 0; i < len; ++i) {
      if (data[i] == '\r') continue;
      buf_ += data[i];
      if (buf_.size() >= 2 && buf_[buf_.size() - 1] == '\n' && buf_[buf_.size() - 2] == '\n') {
        for (const auto& d : take_data()) on_data(d);
      }
    }
  }

 private:
  std::vector<std::string> take_data();
  std::string buf_;
};

// Times one streamed answer from its SSE events' data. A token is a chunk carrying
// text. A stream that carries no text at all before its end, while the server
// reports generated tokens, is timed by its token chunks instead: chunks whose first
// choice holds a text (or delta content) string, with no finish_reason and no role.
// llama-server streams one such empty chunk per token it renders as nothing (the
// unused and control tokens a random-weight model picks); a chat stream's opening
// chunk (a role) is never a token.
class StreamTimer {
 public:
  explicit StreamTimer(int64_t send_ns) : send_ns_(send_ns) {}
  void on_event(const std::string& data, int64_t now_ns);
  // The outcome so far, with the fallback above applied (ok and error left to the
  // caller, which also knows the HTTP status).
  RequestOutcome finish(int64_t end_ns) const;
  bool done() const { return done_; }
  const std::string& error() const { return error_; }

 private:
  // First-token time and gaps of one kind of chunk (text, or empty token chunks).
  struct Chunks {
    int count = 0;
    int64_t first_ns = 0, last_ns = 0;
    std::vector<double> gaps_s;
    void add(int64_t now_ns);
  };
  int64_t send_ns_;
  RequestOutcome out_;
  Chunks text_, empty_;
  bool done_ = false;
  std::string error_;
};

class OpenAiClient {
 public:
  // `base_url` is http://HOST:PORT (validated by validate_options).
  OpenAiClient(const std::string& base_url, const std::string& api_key, double timeout_s);
  ~OpenAiClient();
  OpenAiClient(const OpenAiClient&) = delete;
  OpenAiClient& operator=(const OpenAiClient&) = delete;

  // The body of GET `path` when it answers 200.
  Result<std::string> get(const std::string& path);
  // The id of the first model of GET /v1/models.
  Result<std::string> first_model();
  // Sends one streamed request and times it; `t0_ns` is the run's start (now_ns()).
  RequestOutcome stream(const RequestSpec& spec, int64_t t0_ns);

 private:
  std::string base_url_;
  std::string api_key_;
  std::unique_ptr<httplib::Client> http_;
};

}  // namespace llms::benchserve
