// HttpServer: HTTP/1.1 over TCP on Boost.Asio with a few I/O threads. Each connection
// lives on its own strand; nothing blocks an I/O thread, so thousands of idle or slow
// (streaming) connections cost memory, not threads. Requests are parsed with
// Boost.Beast; responses are written by hand (whole, or chunked for Server-Sent
// Events, each piece flushed as soon as the socket accepts it).
//
// While a request is being answered the connection keeps a read open, so a client
// that goes away is noticed at once and the exchange's on_close callback runs (the
// server cancels the request).
//
// Slow and stuck clients cost a timer each, never a thread: a connection waits
// idle_timeout_s for the first byte of a request, then its headers must be complete
// within header_timeout_s and its body within body_timeout_s (else 408 and close). A
// response the client takes no byte of for stall_timeout_s closes the connection (a
// stream's request is cancelled). Streams write through a bounded buffer: the socket's
// send buffer and the connection's own are stream_buffer_bytes each, and a producer
// past it waits (HttpExchange::when_writable) instead of growing memory. Connections
// beyond max_connections, or beyond max_connections_per_client from one address, are
// answered 503 and closed at once, so the accept loop keeps going.
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

// What the transport did to a client on its own: for metrics.
enum class HttpEvent {
  kRefusedTotal,      // a connection beyond max_connections
  kRefusedPerClient,  // a connection beyond max_connections_per_client
  kHeaderTimeout,     // 408: the headers took longer than header_timeout_s
  kBodyTimeout,       // 408: the body took longer than body_timeout_s
  kWriteStall,        // closed: the client took no response byte for stall_timeout_s
};

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (see port())
  int io_threads = 2;
  int64_t max_body_bytes = 8 << 20;
  double idle_timeout_s = 60;     // for the first byte of a request
  double header_timeout_s = 10;   // from that byte to the end of the headers
  double body_timeout_s = 60;     // from the end of the headers to the end of the body
  double stall_timeout_s = 30;    // a response that no byte of is taken for this long
  int64_t stream_buffer_bytes = 64 << 10;  // unsent bytes that make when_writable() wait; SO_SNDBUF
  int64_t max_buffered_bytes = 16 << 20;   // hard cap on unsent bytes (a producer that does not wait)
  int max_connections = 8192;              // open connections in total (clipped to the fd limit)
  int max_connections_per_client = 1024;   // open connections from one address; 0: no cap
  // Formats transport-level errors (400 malformed HTTP, 413 body too large, 500).
  std::function<HttpResponse(int status, const std::string& message)> error_response;
  // Called when each exchange ends (any I/O thread).
  std::function<void(const HttpExchangeRecord&)> on_exchange;
  // A response header (lower case) whose value the exchange's record keeps
  // (HttpExchangeRecord::header_value); empty: none.
  std::string recorded_header;
  // Called with +1 / -1 as connections open and close (any I/O thread).
  std::function<void(int delta)> on_connection;
  // Called for each refused connection, read timeout and write stall (any I/O thread).
  std::function<void(HttpEvent)> on_event;
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
