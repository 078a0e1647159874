// ConnectionExchange (the HttpExchange of one request on an HttpConnection) and the
// response head both the connections and the refusal path write.
#include <fmt/format.h>

#include "server/http_connection.h"

namespace llms {

namespace http = boost::beast::http;

std::string http_response_head(int status, const std::string& content_type, const HttpHeaders& extra,
                               int64_t content_length, bool keep_alive) {
  std::string h = fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\n", status,
                              std::string(http::obsolete_reason(static_cast<http::status>(status))), content_type);
  if (content_length >= 0) {
    h += fmt::format("Content-Length: {}\r\n", content_length);
  } else {
    if (content_length == kChunkedBody) h += "Transfer-Encoding: chunked\r\n";
    h += "Cache-Control: no-cache\r\nX-Accel-Buffering: no\r\n";
  }
  h += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  for (const auto& [k, v] : extra) h += k + ": " + v + "\r\n";
  h += "\r\n";
  return h;
}

// Hop onto the strand, then act if the connection still exists.
template <typename F>
void ConnectionExchange::on_strand(F&& f) {
  asio::post(strand_, [self = shared_from_this(), f = std::forward<F>(f)]() mutable {
    if (auto c = self->conn_.lock()) f(*c, self.get());
  });
}

void ConnectionExchange::respond(HttpResponse response) {
  on_strand([r = std::move(response)](HttpConnection& c, ConnectionExchange* ex) mutable { c.respond(ex, std::move(r)); });
}

void ConnectionExchange::begin_stream(std::string content_type, HttpHeaders headers) {
  on_strand([t = std::move(content_type), h = std::move(headers)](HttpConnection& c, ConnectionExchange* ex) {
    c.begin_stream(ex, t, h);
  });
}

void ConnectionExchange::write(std::string data) {
  on_strand([d = std::move(data)](HttpConnection& c, ConnectionExchange* ex) { c.write_chunk(ex, d); });
}

void ConnectionExchange::end_stream() {
  on_strand([](HttpConnection& c, ConnectionExchange* ex) { c.end_stream(ex); });
}

void ConnectionExchange::post(std::function<void()> fn) { asio::post(strand_, std::move(fn)); }

void ConnectionExchange::set_on_close(std::function<void()> fn) {
  asio::post(strand_, [self = shared_from_this(), fn = std::move(fn)]() mutable {
    auto c = self->conn_.lock();
    if (!c) {
      if (!self->ended) fn();
      return;
    }
    c->set_on_close(self.get(), std::move(fn));
  });
}

void ConnectionExchange::set_note(std::string note) {
  asio::post(strand_, [self = shared_from_this(), n = std::move(note)]() mutable { self->record.note = std::move(n); });
}

void ConnectionExchange::when_writable(std::function<void()> fn) {
  asio::post(strand_, [self = shared_from_this(), fn = std::move(fn)]() mutable {
    auto c = self->conn_.lock();
    if (!c) return fn();  // nothing left to wait for
    c->when_writable(self.get(), std::move(fn));
  });
}

}  // namespace llms
