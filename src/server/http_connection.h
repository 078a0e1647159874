// One accepted TCP connection of HttpServer (internal to the transport): reads
// requests with Beast's parser, hands each to the handler through an HttpExchange,
// writes the response, and watches the socket while the handler works so that a
// client that goes away is noticed at once.
//
// Reading a request goes through phases, each with its own deadline (HttpServerOptions):
// idle (waiting for its first byte), header, body; a header or body deadline answers
// 408. Writing re-arms a stall deadline at every byte the socket takes; when it passes,
// the connection closes and the exchange's on_close cancels the request.
//
// Thread-safety: every member function runs on the connection's strand (the socket's
// executor); the public entry points post themselves there.
#pragma once

#include <utility>  // Boost 1.74 asio uses std::exchange without including it

#include <boost/asio.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "server/http_server.h"

namespace llms {

namespace asio = boost::asio;
using Tcp = asio::ip::tcp;
using Strand = asio::strand<asio::io_context::executor_type>;

class HttpConnection;

// Shared by the server and its connections (connections may outlive a stop() call
// by a few handler runs). `connections` and `per_client` are under `mu`.
struct HttpServerState {
  HttpServerOptions options;
  HttpHandler handler;
  std::atomic<bool> draining{false};
  std::atomic<int> open{0};
  std::mutex mu;
  std::unordered_map<uint64_t, std::weak_ptr<HttpConnection>> connections;
  std::map<asio::ip::address, int> per_client;  // open connections by client address
  uint64_t next_id = 1;

  void event(HttpEvent e) const {
    if (options.on_event) options.on_event(e);
  }
};

// A response's length when the head is written: chunked (HTTP/1.1 streams), or
// delimited by closing the connection (streams to HTTP/1.0 clients, which do not know
// chunked encoding).
inline constexpr int64_t kChunkedBody = -1;
inline constexpr int64_t kCloseDelimitedBody = -2;

// The status line and headers of a response; content_length >= 0, kChunkedBody or kCloseDelimitedBody.
std::string http_response_head(int status, const std::string& content_type, const HttpHeaders& extra,
                               int64_t content_length, bool keep_alive);

class ConnectionExchange;

class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  HttpConnection(Tcp::socket socket, Strand strand, std::shared_ptr<HttpServerState> state,
                 asio::ip::address client);
  ~HttpConnection();
  void start(uint64_t id);
  // Closes now if no request is being answered, else once its response is written.
  void close_when_idle();

  // HttpExchange operations (on the strand; `ex` must be the current exchange).
  void respond(ConnectionExchange* ex, HttpResponse response);
  // Keeps the value of the recorded header (HttpServerOptions) of a response's headers.
  void note_headers(ConnectionExchange* ex, const HttpHeaders& headers);
  void begin_stream(ConnectionExchange* ex, const std::string& content_type, const HttpHeaders& headers);
  void write_chunk(ConnectionExchange* ex, const std::string& data);
  void end_stream(ConnectionExchange* ex);
  void set_on_close(ConnectionExchange* ex, std::function<void()> fn);
  void when_writable(ConnectionExchange* ex, std::function<void()> fn);
  Strand strand() const { return strand_; }

 private:
  enum class ReadPhase { kNone, kIdle, kHeader, kBody, kLinger };

  void read_request();
  void on_readable(boost::beast::error_code ec);
  void read_header();
  void on_header(boost::beast::error_code ec);
  void on_body(boost::beast::error_code ec);
  void dispatch();
  void watch();
  void on_watch(boost::beast::error_code ec, size_t n);
  void queue(std::string bytes);
  void flush();
  void write_some();
  void on_write(boost::beast::error_code ec, size_t n);
  int64_t unsent() const { return static_cast<int64_t>(pending_.size() + inflight_.size() - inflight_off_); }
  void wake_writer();
  void end_exchange(int status);
  void after_response();
  void fail_request(int status, const std::string& message);
  void linger_close();
  void drain_some();  // one read of what the client still sends, discarded, until close
  void close();
  void arm_read_timer(ReadPhase phase, double seconds);
  void cancel_read_timer();
  void on_read_timeout();
  void arm_stall_timer();
  std::string head(int status, const std::string& content_type, const HttpHeaders& extra, int64_t content_length);

  Tcp::socket socket_;
  Strand strand_;
  std::shared_ptr<HttpServerState> state_;
  const asio::ip::address client_;
  asio::steady_timer timer_;        // the read phase's deadline, or the lingering close's
  asio::steady_timer write_timer_;  // write stall deadline
  // Each arming bumps its counter, so a wait that completes after being re-armed is
  // recognised as stale even when its cancellation came too late.
  uint64_t read_timer_gen_ = 0;
  uint64_t write_timer_gen_ = 0;
  ReadPhase phase_ = ReadPhase::kNone;
  bool read_timed_out_ = false;   // the phase's deadline cancelled the pending read
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  std::shared_ptr<ConnectionExchange> current_;
  uint64_t id_ = 0;
  std::string pending_;   // bytes queued behind the write in flight
  std::string inflight_;  // bytes of the write in flight
  size_t inflight_off_ = 0;  // of which the socket took this many
  std::function<void()> writer_;  // a when_writable() callback waiting for room
  bool writing_ = false;
  bool watching_ = false;
  bool want_next_ = false;        // the watch read was cancelled to read the next request
  bool keep_alive_ = true;
  bool http10_ = false;           // the current request is HTTP/1.0: streams are close-delimited
  bool response_done_ = false;    // the current exchange has queued its last byte
  bool close_after_response_ = false;
  bool closed_ = false;
  std::string drain_buf_;
};

// The HttpExchange handed to handlers; every call hops onto the connection's strand.
class ConnectionExchange : public HttpExchange, public std::enable_shared_from_this<ConnectionExchange> {
 public:
  ConnectionExchange(std::weak_ptr<HttpConnection> conn, Strand strand, HttpExchangeRecord record)
      : record(std::move(record)), conn_(std::move(conn)), strand_(std::move(strand)) {}

  void respond(HttpResponse response) override;
  void begin_stream(std::string content_type, HttpHeaders headers) override;
  void write(std::string data) override;
  void end_stream() override;
  void post(std::function<void()> fn) override;
  void set_on_close(std::function<void()> fn) override;
  void when_writable(std::function<void()> fn) override;
  void set_note(std::string note) override;

  // Touched on the strand only.
  HttpExchangeRecord record;
  int64_t start_ns = 0;
  bool streaming = false;
  bool ended = false;
  std::function<void()> on_close;

 private:
  template <typename F>
  void on_strand(F&& f);

  std::weak_ptr<HttpConnection> conn_;
  Strand strand_;
};

}  // namespace llms
