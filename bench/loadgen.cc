// llmserve_loadgen: N concurrent streaming completion requests against an llmserve
// server, all open at once on one thread (Boost.Asio); reports how many completed,
// time to first token and inter-token latency percentiles, and tokens per second.
//
//   llmserve_loadgen --port 8080 [--connections 1000] [--max-tokens 32] [--chat]
//   llmserve_loadgen --serve build/release/src/cli/llmserve -m MODEL.gguf [--server-args "..."] ...
// With --serve it starts the server itself (port chosen by the server), waits for
// /ready, runs the load, stops the server with SIGTERM and checks it exited 0.
// Exit status 0 only when every request completed.
#include <utility>  // Boost 1.74 asio uses std::exchange without including it

#include <boost/asio.hpp>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "serve_child.h"

namespace asio = boost::asio;
using Tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  std::string host = "127.0.0.1";
  int port = 0;
  int connections = 1000;
  int max_tokens = 32;
  std::string prompt = "Once upon a time";
  bool chat = false;
  double timeout_s = 600;
  std::string serve_bin, model, server_args;
};

struct Stats {
  int completed = 0, failed = 0, connected = 0;
  int64_t tokens = 0;
  std::vector<double> ttft, itl;
  std::string first_error;
};

double secs(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// One streaming request: connect, send, de-chunk, split SSE events, time the tokens.
class Stream : public std::enable_shared_from_this<Stream> {
 public:
  Stream(asio::io_context& io, const Options& o, Stats& st, const std::string& request)
      : socket_(io), o_(o), st_(st), request_(request) {}

  void start(const Tcp::endpoint& ep) {
    start_ = Clock::now();
    socket_.async_connect(ep, [self = shared_from_this()](boost::system::error_code ec) {
      if (ec) return self->fail("connect: " + ec.message());
      self->st_.connected++;
      asio::async_write(self->socket_, asio::buffer(self->request_),
                        [self](boost::system::error_code e, size_t) {
                          if (e) return self->fail("write: " + e.message());
                          self->read();
                        });
    });
  }

 private:
  void read() {
    socket_.async_read_some(asio::buffer(buf_), [self = shared_from_this()](boost::system::error_code ec, size_t n) {
      if (ec) return self->fail(ec == asio::error::eof ? "connection closed before [DONE]" : ec.message());
      self->raw_.append(self->buf_.data(), n);
      if (!self->parse()) return;
      if (!self->done_) self->read();
    });
  }

  // False after a failure or the end.
  bool parse() {
    if (!headers_done_) {
      const size_t end = raw_.find("\r\n\r\n");
      if (end == std::string::npos) return true;
      if (raw_.compare(0, 12, "HTTP/1.1 200") != 0) return fail("status: " + raw_.substr(0, raw_.find("\r\n"))), false;
      headers_done_ = true;
      raw_.erase(0, end + 4);
    }
    for (;;) {  // de-chunk
      const size_t eol = raw_.find("\r\n");
      if (eol == std::string::npos) break;
      const size_t size = std::stoul(raw_.substr(0, eol), nullptr, 16);
      if (raw_.size() < eol + 2 + size + 2) break;
      body_.append(raw_, eol + 2, size);
      raw_.erase(0, eol + 2 + size + 2);
      if (size == 0) break;
    }
    size_t pos;
    while ((pos = body_.find("\n\n")) != std::string::npos) {
      const std::string ev = body_.substr(0, pos);
      body_.erase(0, pos + 2);
      if (!event(ev)) return false;
    }
    return true;
  }

  bool event(const std::string& ev) {
    if (ev.rfind("data: ", 0) != 0) return true;
    const std::string data = ev.substr(6);
    if (data == "[DONE]") {
      done_ = true;
      if (finish_.empty()) return fail("[DONE] without a finish_reason"), false;
      st_.completed++;
      boost::system::error_code ignored;
      socket_.close(ignored);
      return false;
    }
    const auto j = nlohmann::json::parse(data, nullptr, false);
    if (j.is_discarded() || j.contains("error")) return fail("error event: " + data), false;
    for (const auto& ch : j.value("choices", nlohmann::json::array())) {
      const bool has_text = o_.chat ? ch["delta"].value("content", std::string()).size() > 0
                                    : ch.value("text", std::string()).size() > 0;
      if (has_text) {
        const auto now = Clock::now();
        (tokens_ == 0 ? st_.ttft.push_back(secs(now - start_)) : st_.itl.push_back(secs(now - last_)));
        last_ = now;
        ++tokens_;
        st_.tokens++;
      }
      if (!ch["finish_reason"].is_null()) finish_ = ch["finish_reason"];
    }
    return true;
  }

  void fail(const std::string& why) {
    if (done_) return;
    done_ = true;
    st_.failed++;
    if (st_.first_error.empty()) st_.first_error = why;
    boost::system::error_code ignored;
    socket_.close(ignored);
  }

  Tcp::socket socket_;
  const Options& o_;
  Stats& st_;
  const std::string& request_;
  std::array<char, 8192> buf_{};
  std::string raw_, body_, finish_;
  bool headers_done_ = false, done_ = false;
  int64_t tokens_ = 0;
  Clock::time_point start_, last_;
};

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

std::string build_request(const Options& o) {
  nlohmann::json body = {{"max_tokens", o.max_tokens}, {"stream", true}, {"ignore_eos", true}, {"temperature", 0.8}};
  if (o.chat) {
    body["messages"] = {{{"role", "user"}, {"content", o.prompt}}};
  } else {
    body["prompt"] = o.prompt;
  }
  const std::string b = body.dump();
  return std::string("POST ") + (o.chat ? "/v1/chat/completions" : "/v1/completions") +
         " HTTP/1.1\r\nHost: " + o.host + "\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(b.size()) + "\r\n\r\n" + b;
}

int run_load(const Options& o) {
  llms::bench::raise_fd_limit();
  asio::io_context io;
  Stats st;
  const std::string request = build_request(o);
  const Tcp::endpoint ep(asio::ip::make_address(o.host), static_cast<unsigned short>(o.port));
  const auto t0 = Clock::now();
  for (int i = 0; i < o.connections; ++i) std::make_shared<Stream>(io, o, st, request)->start(ep);
  io.run_for(std::chrono::milliseconds(static_cast<int64_t>(o.timeout_s * 1000)));
  const double wall = secs(Clock::now() - t0);
  std::printf("connections: %d requested, %d connected; completed: %d; failed: %d%s%s\n", o.connections, st.connected,
              st.completed, st.failed, st.first_error.empty() ? "" : "; first error: ", st.first_error.c_str());
  std::printf("tokens: %lld in %.2f s = %.1f tokens/s\n", static_cast<long long>(st.tokens), wall,
              static_cast<double>(st.tokens) / wall);
  std::printf("TTFT s: p50 %.3f  p90 %.3f  p99 %.3f  max %.3f\n", pct(st.ttft, 0.5), pct(st.ttft, 0.9),
              pct(st.ttft, 0.99), pct(st.ttft, 1.0));
  std::printf("ITL  s: p50 %.4f  p90 %.4f  p99 %.4f  max %.4f\n", pct(st.itl, 0.5), pct(st.itl, 0.9), pct(st.itl, 0.99),
              pct(st.itl, 1.0));
  const bool all = st.completed == o.connections;
  std::printf("%s: %d of %d streaming requests completed\n", all ? "OK" : "FAILED", st.completed, o.connections);
  return all ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Concurrent streaming load against an llmserve server"};
  app.add_option("--host", o.host, "Server address")->capture_default_str();
  app.add_option("--port", o.port, "Server port (with --serve: chosen by the server)");
  app.add_option("-c,--connections", o.connections, "Concurrent streaming requests")->capture_default_str();
  app.add_option("-n,--max-tokens", o.max_tokens, "Tokens per request (ignore_eos)")->capture_default_str();
  app.add_option("--prompt", o.prompt, "Prompt")->capture_default_str();
  app.add_flag("--chat", o.chat, "Use /v1/chat/completions");
  app.add_option("--timeout", o.timeout_s, "Give up after this many seconds")->capture_default_str();
  app.add_option("--serve", o.serve_bin, "Start this llmserve binary first");
  app.add_option("-m,--model", o.model, "Model for --serve");
  app.add_option("--server-args", o.server_args, "Extra serve flags for --serve");
  CLI11_PARSE(app, argc, argv);
  signal(SIGPIPE, SIG_IGN);
  llms::bench::ServeChild child;
  if (!o.serve_bin.empty()) {
    child = llms::bench::start_serve(o.serve_bin, o.model, o.host, o.server_args);
    o.port = child.port;
    if (child.pid < 0 || o.port == 0) {
      std::fprintf(stderr, "error: the server did not start\n");
      return 1;
    }
  }
  if (o.port == 0 || !llms::bench::wait_ready(o.host, o.port)) {
    std::fprintf(stderr, "error: no ready server on %s:%d\n", o.host.c_str(), o.port);
    return 1;
  }
  int rc = run_load(o);
  if (child.pid > 0) {
    const bool clean = llms::bench::stop_serve(child);
    std::printf("server stopped with SIGTERM: %s\n", clean ? "exit 0" : "NOT a clean exit");
    if (!clean) rc = 1;
  }
  return rc;
}
