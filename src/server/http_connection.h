// One accepted TCP connection of HttpServer (internal to the transport): reads
// requests with Beast's parser, hands each to the handler through an HttpExchange,
// writes the response, and watches the socket while the handler works so that a
// client that goes away is noticed at once.
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
// by a few handler runs).
struct HttpServerState {
  HttpServerOptions options;
  HttpHandler handler;
  std::atomic<bool> draining{false};
  std::atomic<int> open{0};
  std::mutex mu;
  std::unordered_map<uint64_t, std::weak_ptr<HttpConnection>> connections;
  uint64_t next_id = 1;
};

class ConnectionExchange;

class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  HttpConnection(Tcp::socket socket, Strand strand, std::shared_ptr<HttpServerState> state);
  ~HttpConnection();
  void start(uint64_t id);
  // Closes now if no request is being answered, else once its response is written.
  void close_when_idle();

  // HttpExchange operations (on the strand; `ex` must be the current exchange).
  void respond(ConnectionExchange* ex, HttpResponse response);
  void begin_stream(ConnectionExchange* ex, const std::string& content_type, const HttpHeaders& headers);
  void write_chunk(ConnectionExchange* ex, const std::string& data);
  void end_stream(ConnectionExchange* ex);
  void set_on_close(ConnectionExchange* ex, std::function<void()> fn);
  Strand strand() const { return strand_; }

 private:
  void read_request();
  void on_header(boost::beast::error_code ec);
  void on_body(boost::beast::error_code ec);
  void dispatch();
  void watch();
  void on_watch(boost::beast::error_code ec, size_t n);
  void queue(std::string bytes);
  void flush();
  void on_write(boost::beast::error_code ec);
  void end_exchange(int status);
  void after_response();
  void fail_request(int status, const std::string& message);
  void linger_close();
  void close();
  void arm_timer(double seconds);
  std::string head(int status, const std::string& content_type, const HttpHeaders& extra, int64_t content_length);

  Tcp::socket socket_;
  Strand strand_;
  std::shared_ptr<HttpServerState> state_;
  asio::steady_timer timer_;        // request read deadline, lingering close
  asio::steady_timer write_timer_;  // write stall deadline
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  std::shared_ptr<ConnectionExchange> current_;
  uint64_t id_ = 0;
  std::string pending_;   // bytes queued behind the write in flight
  std::string inflight_;  // bytes of the write in flight
  bool writing_ = false;
  bool watching_ = false;
  bool want_next_ = false;        // the watch read was cancelled to read the next request
  bool keep_alive_ = true;
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
