// Helpers for the server's end-to-end tests: an in-process server on a free port, a
// real HTTP client (cpp-httplib), SSE parsing, a raw socket client for abrupt
// disconnects, /metrics parsing, and polling with a deadline.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "server/llm_server.h"
#include "server/server_config.h"

namespace llms::test {

using Json = nlohmann::json;

const std::string& shared_dir();
std::string stories_path();  // "" when the model is absent
bool have_stories();
// A small synthetic model written once per process (random weights).
const std::string& synthetic_path();
// A larger synthetic model (context 8192) whose long generations take seconds, for
// tests that need requests still running or queued at a chosen moment.
const std::string& slow_synthetic_path();

// Starts a server on 127.0.0.1 with a free port; `tweak` adjusts the config first.
std::unique_ptr<LlmServer> start_server(const std::string& model, const std::function<void(ServeConfig&)>& tweak = {});

struct HttpResult {
  int status = 0;  // 0: no response
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string header(const std::string& name) const;
  Json json() const;  // null when the body is not JSON
};

// Extra request headers, e.g. {{"Authorization", "Bearer KEY"}}.
using Headers = std::vector<std::pair<std::string, std::string>>;

HttpResult http_get(int port, const std::string& path, const Headers& headers = {});
HttpResult http_post(int port, const std::string& path, const std::string& body, const Headers& headers = {});
inline HttpResult http_post(int port, const std::string& path, const Json& body, const Headers& headers = {}) {
  return http_post(port, path, body.dump(), headers);
}

// A streamed POST: the SSE events' data fields ("[DONE]" included), in order.
struct SseResult {
  int status = 0;
  std::string content_type;
  std::vector<std::string> events;
  std::string raw;
  bool done() const { return !events.empty() && events.back() == "[DONE]"; }
  std::vector<Json> chunks() const;  // every event but [DONE], parsed
};
SseResult http_stream(int port, const std::string& path, const Json& body);
std::vector<std::string> parse_sse(const std::string& raw);
// Named SSE events (`event: NAME` then `data: JSON`, as the Responses and Messages APIs
// frame them): each name with its parsed data (null when an event has no data).
std::vector<std::pair<std::string, Json>> parse_named_sse(const std::string& raw);

// A client on a plain socket, for leaving abruptly, sending slowly or not reading.
class RawClient {
 public:
  // `receive_buffer` > 0 sets SO_RCVBUF before connecting: a client that never reads
  // then absorbs only that much of a response.
  explicit RawClient(int port, int receive_buffer = 0);
  ~RawClient();
  bool send_request(const std::string& method, const std::string& path, const std::string& body);
  bool send_raw(const std::string& bytes);
  // Reads until `needle` has arrived or `timeout_s` passed; what arrived.
  std::string read_until(const std::string& needle, double timeout_s);
  // Reads (and keeps) at most `max_bytes` of what has arrived; how many.
  size_t read_some(size_t max_bytes);
  // Reads (and keeps) everything until the server closes; false when `timeout_s`
  // passed first.
  bool wait_closed(double timeout_s);
  const std::string& received() const { return received_; }
  void close();
  bool connected() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
  std::string received_;
};

// /metrics text without the version="..." label every engine metric carries, for
// tests about values rather than versions.
std::string without_version_labels(const std::string& text);
// The value of a sample line "name{labels} value" (pass the name with its labels; a
// name without the version label matches the series of any version); NaN when absent.
double metric(const std::string& text, const std::string& name_and_labels);
double metric(int port, const std::string& name_and_labels);
// Same, read from the server's registry in process (takes no connection).
double metric(LlmServer& server, const std::string& name_and_labels);

// `llmserve serve --port 0 ARGS` as a child process, its port read from the first
// line it prints (0 when it failed to start); `launcher` goes before the binary
// (mpirun and its flags).
struct ServeChild {
  pid_t pid = -1;
  int port = 0;
  int stdout_fd = -1;  // kept open: the server prints again when it stops
};
ServeChild spawn_serve(const std::string& args, const std::string& launcher = "");
// Stops the child (SIGTERM), waits for it and returns its wait status.
int stop_serve(const ServeChild& child);

// {"city": a string of 1..8 characters}, nothing else: a schema (a tool's parameters,
// an answer's format) that a weak model fills within a few dozen tokens.
Json city_schema();

// A suite sharing one server on stories260K (default settings), skipped where the
// model is absent; post() checks the status it expects.
class StoriesServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite();
  static void TearDownTestSuite();
  void SetUp() override;
  static int port();
  static Json post(const std::string& path, const Json& body, int status = 200);

 private:
  static std::unique_ptr<LlmServer> server_;
};

// Calls `cond` until it returns true or `timeout_s` passes.
bool poll_until(const std::function<bool()>& cond, double timeout_s = 20.0);

}  // namespace llms::test
