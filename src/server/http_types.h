// The HTTP transport's interface to the rest of the server: a parsed request, a whole
// response, and an HttpExchange through which a handler answers one request — with a
// whole response, or as a chunked stream (Server-Sent Events) written piece by piece.
//
// Thread-safety: HttpRequest/HttpResponse are plain values. Every HttpExchange method
// may be called from any thread: it posts the work onto the connection's strand, so
// writes keep their order. Callbacks given to post() and set_on_close() run on that
// strand, one at a time.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace llms {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;   // "GET", "POST", ...
  std::string path;     // target without the query string
  std::string body;
  HttpHeaders headers;  // names lower-cased
  // The first header named `name` (lower case), or "".
  std::string header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  HttpHeaders headers;  // extra headers (Retry-After, ...)
};

class HttpExchange {
 public:
  virtual ~HttpExchange() = default;
  // Sends a whole response; ends the exchange.
  virtual void respond(HttpResponse response) = 0;
  // Starts a chunked response (status 200); then write() pieces and end_stream().
  virtual void begin_stream(std::string content_type, HttpHeaders headers = {}) = 0;
  // Sends one piece now (flushed as soon as the socket takes it).
  virtual void write(std::string data) = 0;
  virtual void end_stream() = 0;
  // Runs `fn` on this connection's strand, even after the client went away.
  virtual void post(std::function<void()> fn) = 0;
  // Like post(), but only once the response's unsent bytes are below the connection's
  // stream buffer: at once when they are (or the connection is gone), else when the
  // client has read enough. A stream's producer calls it before producing more, so a
  // client that reads slowly holds the producer back instead of growing a buffer.
  virtual void when_writable(std::function<void()> fn) = 0;
  // `fn` runs once, on the strand, if the connection closes before the exchange ends
  // (the client went away, a write stalled, the server shut down). Runs at once
  // (posted) when the connection is already closed.
  virtual void set_on_close(std::function<void()> fn) = 0;
  // Attaches `note` to the exchange's record (HttpExchangeRecord::note: the access
  // log's line); call before the call that ends the exchange.
  virtual void set_note(std::string /*note*/) {}
};

using HttpHandler = std::function<void(HttpRequest request, std::shared_ptr<HttpExchange> exchange)>;

// What the transport reports when an exchange ends: for request metrics.
struct HttpExchangeRecord {
  std::string method;
  std::string path;
  int status = 0;
  double seconds = 0;
  bool client_gone = false;  // the connection closed before the exchange ended
  std::string header_value;  // the response's HttpServerOptions::recorded_header, if it had one
  std::string note;          // what the handler attached (HttpExchange::set_note)
};

}  // namespace llms
