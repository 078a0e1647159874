// HttpServer: HTTP/1.1 over TCP on Boost.Asio with a few I/O threads. Each connection
// lives on its own strand; nothing blocks an I/O thread, so thousands of idle or slow
// (streaming) connections cost memory, not threads. Requests are parsed with
// Boost.Beast; responses are written by hand (whole, or chunked for Server-Sent
// Events, each piece flushed as soon as the socket accepts it).
//
// While a request is being answered the connection keeps a read open, so a client
// that goes away is noticed at once and the exchange's on_close callback runs (the
// server cancels the request). Timeouts: a request must arrive within idle_timeout_s;
// a write that makes no progress for write_timeout_s closes the connection, and so
// does more than max_buffered_bytes of unsent stream data (a client that stopped
// reading).
//
// Thread-safety: start() once; stop_accepting(), set_draining(), stop(),
// open_connections() from any thread. Handlers run on the I/O threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "server/http_types.h"

namespace llms {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (see port())
  int io_threads = 2;
  int64_t max_body_bytes = 8 << 20;
  double idle_timeout_s = 60;
  double write_timeout_s = 60;
  int64_t max_buffered_bytes = 16 << 20;
  // Formats transport-level errors (400 malformed HTTP, 413 body too large, 500).
  std::function<HttpResponse(int status, const std::string& message)> error_response;
  // Called when each exchange ends (any I/O thread).
  std::function<void(const HttpExchangeRecord&)> on_exchange;
  // Called with +1 / -1 as connections open and close (any I/O thread).
  std::function<void(int delta)> on_connection;
};

struct HttpServerState;

class HttpServer {
 public:
  HttpServer(HttpServerOptions options, HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds, listens and starts the I/O threads. UNAVAILABLE when the address is taken.
  Status start();
  int port() const { return port_; }

  // Closes the listening socket; open connections keep being served.
  void stop_accepting();
  // From now on every response says "Connection: close", and idle connections close.
  void set_draining();
  // Closes every connection once its pending writes are flushed, waits up to
  // `grace_s` for them, then stops the I/O threads. Idempotent.
  void stop(double grace_s);
  int open_connections() const;

 private:
  void accept_next();

  std::shared_ptr<HttpServerState> state_;
  struct Io;
  std::unique_ptr<Io> io_;
  std::vector<std::thread> threads_;
  int port_ = 0;
  bool stopped_ = false;
};

}  // namespace llms
