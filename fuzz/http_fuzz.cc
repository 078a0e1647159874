// libFuzzer target for the HTTP request parser as the connection state machine drives
// it: an in-process HttpServer on loopback gets each input as the bytes of one client
// connection — pipelined requests, chunked bodies, oversized headers, garbage — sent
// in pieces (the first byte picks their size, so that reads end mid-line), then a
// half-close. The handler echoes what it parsed (some answers posted later, some
// streamed through when_writable), so the state machine answers while more requests
// arrive. Properties, beyond "no crash, no sanitizer report, no leak":
//   * the server closes the connection soon after the client's half-close;
//   * everything it sent parses as a sequence of HTTP/1.1 responses, each with a
//     status the transport or the handler gives, and none to HEAD with a body (the
//     last may be cut short: a half-close is a client that left, and its response
//     in progress stops);
//   * every echo holds exactly as many body bytes as it says the request had.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/beast/http.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "base/clock.h"
#include "fuzz_util.h"
#include "server/http_server.h"

namespace llms::fuzz {
namespace {

namespace http = boost::beast::http;

constexpr double kCloseDeadlineS = 5.0;

// "<method> <path> <body bytes>\n" + the body: what the server parsed.
std::string echo(const HttpRequest& r) { return r.method + " " + r.path + " " + std::to_string(r.body.size()) + "\n" + r.body; }

HttpHeaders method_header(const HttpRequest& r) { return {{"X-Request-Method", r.method}}; }

void stream_pieces(const std::shared_ptr<HttpExchange>& ex, std::shared_ptr<int> left, std::string piece) {
  if (--*left < 0) return ex->end_stream();
  ex->write(piece);
  ex->when_writable([ex, left, piece] { stream_pieces(ex, left, piece); });
}

void handle(HttpRequest req, std::shared_ptr<HttpExchange> ex) {
  if (req.path == "/stream") {
    ex->begin_stream("text/event-stream", method_header(req));
    return stream_pieces(ex, std::make_shared<int>(3), "data: " + echo(req) + "\n\n");
  }
  if (req.path == "/later") {  // answered from a later strand run, as completions are
    return ex->post([ex, body = echo(req), h = method_header(req)] { ex->respond(HttpResponse{200, "text/plain", body, h}); });
  }
  // The transport answers 500 (without the method header: the checker could not tell
  // a HEAD's bodiless 500 from another's, so HEAD is answered as usual).
  if (req.path == "/fail" && req.method != "HEAD") throw std::runtime_error("handler failure");
  ex->respond(HttpResponse{req.path == "/missing" ? 404 : 200, "text/plain", echo(req), method_header(req)});
}

HttpServer& server() {
  static HttpServer* s = [] {
    HttpServerOptions o;
    o.port = 0;
    o.io_threads = 2;
    o.max_body_bytes = 16 << 10;
    o.idle_timeout_s = 2;
    o.header_timeout_s = 2;
    o.body_timeout_s = 2;
    o.stall_timeout_s = 2;
    o.stream_buffer_bytes = 4096;
    auto* srv = new HttpServer(o, handle);  // lives for the whole run
    if (!srv->start().ok()) fail("the HTTP server did not start");
    return srv;
  }();
  return *s;
}

int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) fail("connect to the server failed");
  return fd;
}

// Sends `bytes` in pieces of `piece` bytes while reading what comes back, then
// half-closes and reads until the server closes. False when it does not close in time.
bool exchange(int fd, std::string_view bytes, size_t piece, std::string* got) {
  const int64_t deadline = now_ns() + static_cast<int64_t>(kCloseDeadlineS * 1e9);
  size_t sent = 0;
  bool half_closed = false;
  char buf[16384];
  while (now_ns() < deadline) {
    if (sent == bytes.size() && !half_closed) {
      ::shutdown(fd, SHUT_WR);
      half_closed = true;
    }
    pollfd p{fd, static_cast<short>(POLLIN | (half_closed ? 0 : POLLOUT)), 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    if ((p.revents & POLLOUT) != 0 && !half_closed) {
      const ssize_t n = ::send(fd, bytes.data() + sent, std::min(piece, bytes.size() - sent), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0) return true;  // the server closed first (after an error response)
      sent += static_cast<size_t>(n);
    }
    if ((p.revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      const ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
      if (n <= 0) return true;
      got->append(buf, static_cast<size_t>(n));
    }
  }
  return false;
}

bool known_status(unsigned s) {
  return s == 100 || s == 200 || s == 400 || s == 404 || s == 408 || s == 413 || s == 431 || s == 500;
}

void check_echo(const std::string& body) {
  const size_t eol = body.find('\n');
  if (eol == std::string::npos) fail("an echo without its first line");
  const size_t space = body.rfind(' ', eol);
  if (space == std::string::npos) fail("an echo without a body size");
  if (std::stoul(body.substr(space + 1, eol - space - 1)) != body.size() - eol - 1) {
    fail("an echo whose body differs from the size the parser reported");
  }
}

// Everything the server sent must be well-formed responses, back to back; those to
// HEAD (the handler names the method) without a body.
void check_responses(std::string_view got) {
  while (!got.empty()) {
    const std::string_view head = got.substr(0, got.find("\r\n\r\n"));
    http::response_parser<http::string_body> parser;
    parser.body_limit(1 << 24);
    parser.header_limit(1 << 20);  // the handler echoes the method, which may be long
    parser.skip((std::string(head) + "\r\n").find("\r\nX-Request-Method: HEAD\r\n") != std::string::npos);
    boost::beast::error_code ec;
    size_t used = 0;
    while (!parser.is_done() && !ec && used < got.size()) {
      const size_t n = parser.put(boost::asio::buffer(got.data() + used, got.size() - used), ec);
      used += n;
      if (n == 0 && !ec) break;
    }
    // The client's half-close reads as "the client left": the response in progress
    // stops where it was, so the last one may be cut short — but never malformed.
    if (!parser.is_done() && (!ec || ec == http::error::need_more)) return;
    if (ec || !parser.is_done()) {
      std::fprintf(stderr, "received (from the bad response on):\n%.*s\n", static_cast<int>(std::min<size_t>(got.size(), 4000)),
                   got.data());
      fail("the server sent bytes that are not a complete HTTP response");
    }
    const auto& res = parser.get();
    if (!known_status(res.result_int())) fail("an unexpected status");
    if (res.result_int() == 200 && res[http::field::content_type] == "text/plain" && res["X-Request-Method"] != "HEAD") {
      check_echo(res.body());
    }
    got.remove_prefix(used);
  }
}

}  // namespace
}  // namespace llms::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  llms::fuzz::server();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace llms::fuzz;
  if (size == 0) return 0;
  // At most ~32 pieces: enough for reads that end mid-line, few enough to stay fast.
  const size_t piece = data[0] >= 128 ? size : std::max<size_t>(1 + data[0] % 64, size / 32);
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  const int fd = connect_to(server().port());
  std::string got;
  const bool closed = exchange(fd, bytes, piece, &got);
  linger l{1, 0};  // reset: no TIME_WAIT for a million connections
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
  ::close(fd);
  if (!closed) fail("the server did not close a half-closed connection within 5 s");
  check_responses(got);
  return 0;
}
