#include "server_test_util.h"

#include <sstream>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <httplib.h>

#include <regex>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <thread>

#include "base/clock.h"
#include "tools/synthetic.h"

namespace llms::test {

const std::string& shared_dir() {
  static const std::string dir = LLMSERVE_SHARED_DIR;
  return dir;
}

std::string stories_path() {
  const std::string p = shared_dir() + "/models/stories260K.gguf";
  return std::filesystem::exists(p) ? p : "";
}

bool have_stories() { return !stories_path().empty(); }

namespace {
// A file removed when the test process exits.
struct TempModel {
  std::string path;
  ~TempModel() { std::filesystem::remove(path); }
};
}  // namespace

const std::string& synthetic_path() {
  static const TempModel model{[] {
    const std::string p = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_server_synthetic.gguf";
    SyntheticSpec spec;
    spec.n_ctx = 1024;
    spec.seed = 11;
    const Status s = write_synthetic_model(spec, p);
    if (!s.ok()) throw std::runtime_error(s.to_string());
    return p;
  }()};
  return model.path;
}

const std::string& slow_synthetic_path() {
  static const TempModel model{[] {
    const std::string p = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_server_slow.gguf";
    SyntheticSpec spec;
    spec.n_embd = 256;
    spec.n_head = 4;
    spec.n_head_kv = 2;
    spec.n_layer = 4;
    spec.n_ff = 768;
    spec.n_ctx = 8192;
    spec.seed = 12;
    const Status s = write_synthetic_model(spec, p);
    if (!s.ok()) throw std::runtime_error(s.to_string());
    return p;
  }()};
  return model.path;
}

std::unique_ptr<LlmServer> start_server(const std::string& model, const std::function<void(ServeConfig&)>& tweak) {
  ServeConfig c;
  c.server.model_path = model;
  c.server.port = 0;
  c.server.shutdown_timeout_s = 5;
  c.engine.kv.cache_bytes = 16 << 20;
  c.engine.threads = 1;
  if (tweak) tweak(c);
  auto r = LlmServer::start(c);
  if (!r.ok()) throw std::runtime_error(r.status().to_string());
  return std::move(r).value();
}

std::string HttpResult::header(const std::string& name) const {
  for (const auto& [k, v] : headers) {
    if (strcasecmp(k.c_str(), name.c_str()) == 0) return v;
  }
  return "";
}

Json HttpResult::json() const {
  Json j = Json::parse(body, nullptr, false);
  return j.is_discarded() ? Json(nullptr) : j;
}

namespace {

HttpResult from(const httplib::Result& r) {
  HttpResult out;
  if (!r) return out;
  out.status = r->status;
  out.body = r->body;
  for (const auto& [k, v] : r->headers) out.headers.emplace_back(k, v);
  return out;
}

httplib::Client client(int port) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(120, 0);
  c.set_connection_timeout(10, 0);
  return c;
}

httplib::Headers to_httplib(const Headers& headers) {
  httplib::Headers h;
  for (const auto& [k, v] : headers) h.emplace(k, v);
  return h;
}

}  // namespace

HttpResult http_get(int port, const std::string& path, const Headers& headers) {
  auto c = client(port);
  return from(c.Get(path.c_str(), to_httplib(headers)));
}

HttpResult http_post(int port, const std::string& path, const std::string& body, const Headers& headers) {
  auto c = client(port);
  return from(c.Post(path.c_str(), to_httplib(headers), body, "application/json"));
}

std::vector<std::string> parse_sse(const std::string& raw) {
  std::vector<std::string> events;
  size_t pos = 0;
  while (true) {
    const size_t end = raw.find("\n\n", pos);
    if (end == std::string::npos) break;
    const std::string block = raw.substr(pos, end - pos);
    pos = end + 2;
    if (block.rfind("data: ", 0) == 0) events.push_back(block.substr(6));
  }
  return events;
}

Json city_schema() {
  return {{"type", "object"},
          {"properties", {{"city", {{"type", "string"}, {"minLength", 1}, {"maxLength", 8}}}}},
          {"required", {"city"}},
          {"additionalProperties", false}};
}

std::unique_ptr<LlmServer> StoriesServerTest::server_;

void StoriesServerTest::SetUpTestSuite() {
  if (have_stories()) server_ = start_server(stories_path());
}

void StoriesServerTest::TearDownTestSuite() { server_.reset(); }

void StoriesServerTest::SetUp() {
  if (!have_stories()) GTEST_SKIP() << "needs " << shared_dir() << "/models/stories260K.gguf";
}

int StoriesServerTest::port() { return server_->port(); }

Json StoriesServerTest::post(const std::string& path, const Json& body, int status) {
  const HttpResult r = http_post(port(), path, body);
  EXPECT_EQ(r.status, status) << r.body;
  return r.json();
}

std::vector<std::pair<std::string, Json>> parse_named_sse(const std::string& raw) {
  std::vector<std::pair<std::string, Json>> events;
  size_t pos = 0;
  for (size_t end; (end = raw.find("\n\n", pos)) != std::string::npos; pos = end + 2) {
    std::string name;
    Json data = nullptr;
    std::istringstream block(raw.substr(pos, end - pos));
    for (std::string line; std::getline(block, line);) {
      if (line.rfind("event: ", 0) == 0) name = line.substr(7);
      if (line.rfind("data: ", 0) == 0) data = Json::parse(line.substr(6), nullptr, false);
    }
    events.emplace_back(std::move(name), std::move(data));
  }
  return events;
}

std::vector<Json> SseResult::chunks() const {
  std::vector<Json> out;
  for (const auto& e : events) {
    if (e != "[DONE]") out.push_back(Json::parse(e, nullptr, false));
  }
  return out;
}

SseResult http_stream(int port, const std::string& path, const Json& body) {
  auto c = client(port);
  SseResult out;
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char* data, size_t len, uint64_t, uint64_t) {
    out.raw.append(data, len);
    return true;
  };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  if (c.send(req, res, err)) {
    out.status = res.status;
    out.content_type = res.get_header_value("Content-Type");
    if (out.raw.empty()) out.raw = res.body;
  }
  out.events = parse_sse(out.raw);
  return out;
}

RawClient::RawClient(int port, int receive_buffer) {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (receive_buffer > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) close();
}

RawClient::~RawClient() { close(); }

bool RawClient::send_request(const std::string& method, const std::string& path, const std::string& body) {
  if (fd_ < 0) return false;
  return send_raw(method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
                  "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
}

bool RawClient::send_raw(const std::string& req) {
  if (fd_ < 0) return false;
  size_t sent = 0;
  while (sent < req.size()) {
    const ssize_t n = ::send(fd_, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

std::string RawClient::read_until(const std::string& needle, double timeout_s) {
  const int64_t deadline = now_ns() + static_cast<int64_t>(timeout_s * 1e9);
  char buf[4096];
  while (fd_ >= 0 && received_.find(needle) == std::string::npos && now_ns() < deadline) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) break;
    received_.append(buf, static_cast<size_t>(n));
  }
  return received_;
}

size_t RawClient::read_some(size_t max_bytes) {
  if (fd_ < 0) return 0;
  std::string buf(max_bytes, '\0');
  const ssize_t n = ::recv(fd_, buf.data(), buf.size(), MSG_DONTWAIT);
  if (n <= 0) return 0;
  received_.append(buf.data(), static_cast<size_t>(n));
  return static_cast<size_t>(n);
}

bool RawClient::wait_closed(double timeout_s) {
  const int64_t deadline = now_ns() + static_cast<int64_t>(timeout_s * 1e9);
  char buf[4096];
  while (fd_ >= 0 && now_ns() < deadline) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) return true;
    received_.append(buf, static_cast<size_t>(n));
  }
  return false;
}

void RawClient::close() {
  if (fd_ >= 0) {
    linger l{1, 0};  // reset, like a client that dies
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
    ::close(fd_);
  }
  fd_ = -1;
}

std::string without_version_labels(const std::string& text) {
  static const std::regex version_label(R"(version="[^"]*",?)");
  std::string s = std::regex_replace(text, version_label, "");
  static const std::regex empty_braces(R"(\{\})"), trailing_comma(R"(,\})");
  s = std::regex_replace(s, empty_braces, "");
  return std::regex_replace(s, trailing_comma, "}");
}

namespace {
double sample_value(const std::string& text, const std::string& name_and_labels) {
  const std::string key = name_and_labels + " ";
  size_t pos = 0;
  while ((pos = text.find(key, pos)) != std::string::npos) {
    if (pos == 0 || text[pos - 1] == '\n') return std::stod(text.substr(pos + key.size()));
    pos += key.size();
  }
  return std::nan("");
}
}  // namespace

double metric(const std::string& text, const std::string& name_and_labels) {
  const double exact = sample_value(text, name_and_labels);
  return std::isnan(exact) ? sample_value(without_version_labels(text), name_and_labels) : exact;
}

double metric(int port, const std::string& name_and_labels) { return metric(http_get(port, "/metrics").body, name_and_labels); }

double metric(LlmServer& server, const std::string& name_and_labels) {
  return metric(server.context().render_metrics(), name_and_labels);
}

bool poll_until(const std::function<bool()>& cond, double timeout_s) {
  const int64_t deadline = now_ns() + static_cast<int64_t>(timeout_s * 1e9);
  while (now_ns() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // polling interval, not synchronization
  }
  return cond();
}

// Starts `llmserve serve ... --port 0` and reads the port from its first line.
ServeChild spawn_serve(const std::string& args, const std::string& launcher) {
  const std::string bin = LLMSERVE_BIN;
  int fds[2];
  if (pipe(fds) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    execl("/bin/sh", "sh", "-c", ("exec " + launcher + " " + bin + " serve --port 0 " + args).c_str(), nullptr);
    _exit(127);
  }
  close(fds[1]);
  ServeChild child{pid, 0, fds[0]};
  std::string line;
  char ch;
  while (read(fds[0], &ch, 1) == 1 && ch != '\n') line += ch;
  const size_t colon = line.rfind(':');
  if (line.find("serving") != std::string::npos && colon != std::string::npos) child.port = std::stoi(line.substr(colon + 1));
  return child;
}

int stop_serve(const ServeChild& child) {
  kill(child.pid, SIGTERM);
  int status = 0;
  waitpid(child.pid, &status, 0);
  close(child.stdout_fd);
  return status;
}

}  // namespace llms::test
