#include "server/http_connection.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "base/clock.h"
#include "base/log.h"

namespace llms {

namespace beast = boost::beast;
namespace http = beast::http;

namespace {

constexpr size_t kMaxHeaderBytes = 64 << 10;
constexpr size_t kWatchChunk = 4096;
constexpr size_t kMaxPipelinedBytes = 1 << 20;
constexpr double kLingerSeconds = 2.0;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool peer_gone(const beast::error_code& ec) {
  return ec == http::error::end_of_stream || ec == asio::error::eof || ec == asio::error::connection_reset ||
         ec == asio::error::broken_pipe || ec == asio::error::operation_aborted || ec == asio::error::bad_descriptor;
}

}  // namespace

// ---- ConnectionExchange: hop onto the strand, then act if still current. ----

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

// ---- HttpConnection ----

HttpConnection::HttpConnection(Tcp::socket socket, Strand strand, std::shared_ptr<HttpServerState> state)
    : socket_(std::move(socket)),
      strand_(std::move(strand)),
      state_(std::move(state)),
      timer_(strand_),
      write_timer_(strand_) {}

HttpConnection::~HttpConnection() = default;

void HttpConnection::start(uint64_t id) {
  id_ = id;
  state_->open.fetch_add(1);
  if (state_->options.on_connection) state_->options.on_connection(+1);
  asio::dispatch(strand_, [self = shared_from_this()] { self->read_request(); });
}

void HttpConnection::close_when_idle() {
  asio::post(strand_, [self = shared_from_this()] {
    if (self->current_ == nullptr || (self->response_done_ && !self->writing_)) {
      self->close();
    } else {
      self->close_after_response_ = true;
    }
  });
}

void HttpConnection::arm_timer(double seconds) {
  timer_.expires_after(std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)));
  timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (!ec) self->close();
  });
}

void HttpConnection::read_request() {
  if (closed_) return;
  current_.reset();
  parser_.emplace();
  parser_->header_limit(kMaxHeaderBytes);
  parser_->body_limit(static_cast<uint64_t>(state_->options.max_body_bytes));
  arm_timer(state_->options.idle_timeout_s);
  http::async_read_header(socket_, buffer_, *parser_,
                          [self = shared_from_this()](beast::error_code ec, size_t) { self->on_header(ec); });
}

void HttpConnection::on_header(beast::error_code ec) {
  if (ec) {
    timer_.cancel();
    if (peer_gone(ec) || closed_) return close();
    if (ec == http::error::header_limit) return fail_request(431, "request headers are too large");
    if (ec == http::error::body_limit) {
      return fail_request(413, fmt::format("the request body is larger than {} bytes (max_body_bytes)",
                                           state_->options.max_body_bytes));
    }
    return fail_request(400, fmt::format("malformed HTTP request: {}", ec.message()));
  }
  const auto len = parser_->content_length();
  if (len && *len > static_cast<uint64_t>(state_->options.max_body_bytes)) {
    timer_.cancel();
    return fail_request(413, fmt::format("the request body has {} bytes; the limit is {} (max_body_bytes)", *len,
                                         state_->options.max_body_bytes));
  }
  if (beast::iequals(parser_->get()[http::field::expect], "100-continue")) queue("HTTP/1.1 100 Continue\r\n\r\n");
  http::async_read(socket_, buffer_, *parser_,
                   [self = shared_from_this()](beast::error_code ec2, size_t) { self->on_body(ec2); });
}

void HttpConnection::on_body(beast::error_code ec) {
  timer_.cancel();
  if (ec == http::error::body_limit) {
    return fail_request(413, fmt::format("the request body is larger than {} bytes (max_body_bytes)",
                                         state_->options.max_body_bytes));
  }
  if (ec) {
    if (peer_gone(ec) || closed_) return close();
    return fail_request(400, fmt::format("malformed HTTP request: {}", ec.message()));
  }
  dispatch();
}

void HttpConnection::dispatch() {
  auto msg = parser_->release();
  parser_.reset();
  HttpRequest req;
  req.method = std::string(msg.method_string());
  const std::string target(msg.target());
  req.path = target.substr(0, target.find('?'));
  for (const auto& f : msg) req.headers.emplace_back(lower(std::string(f.name_string())), std::string(f.value()));
  req.body = std::move(msg.body());
  keep_alive_ = msg.keep_alive();
  response_done_ = false;
  HttpExchangeRecord rec{req.method, req.path, 0, 0, false};
  current_ = std::make_shared<ConnectionExchange>(weak_from_this(), strand_, std::move(rec));
  current_->start_ns = now_ns();
  watch();
  auto ex = current_;
  try {
    state_->handler(std::move(req), ex);
  } catch (const std::exception& e) {
    log_error("http handler failed: {}", e.what());
    respond(ex.get(), state_->options.error_response(500, "internal error"));
  }
}

// A read kept open while a request is answered: EOF or an error means the client left.
void HttpConnection::watch() {
  if (watching_ || closed_) return;
  watching_ = true;
  socket_.async_read_some(buffer_.prepare(kWatchChunk), [self = shared_from_this()](beast::error_code ec, size_t n) {
    self->on_watch(ec, n);
  });
}

void HttpConnection::on_watch(beast::error_code ec, size_t n) {
  watching_ = false;
  if (!ec) buffer_.commit(n);  // a pipelined request: parsed after this response
  if (want_next_ && (!ec || ec == asio::error::operation_aborted)) {
    want_next_ = false;
    return read_request();
  }
  if (ec == asio::error::operation_aborted || closed_) return;
  if (ec) return close();
  if (buffer_.size() < kMaxPipelinedBytes) watch();
}

std::string HttpConnection::head(int status, const std::string& content_type, const HttpHeaders& extra,
                                 int64_t content_length) {
  const bool keep = keep_alive_ && !state_->draining.load() && !close_after_response_;
  if (!keep) close_after_response_ = true;
  std::string h = fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\n", status,
                              std::string(http::obsolete_reason(static_cast<http::status>(status))), content_type);
  if (content_length >= 0) {
    h += fmt::format("Content-Length: {}\r\n", content_length);
  } else {
    h += "Transfer-Encoding: chunked\r\nCache-Control: no-cache\r\nX-Accel-Buffering: no\r\n";
  }
  h += keep ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  for (const auto& [k, v] : extra) h += k + ": " + v + "\r\n";
  h += "\r\n";
  return h;
}

void HttpConnection::respond(ConnectionExchange* ex, HttpResponse r) {
  if (ex != current_.get() || ex->ended || ex->streaming || closed_) return;
  queue(head(r.status, r.content_type, r.headers, static_cast<int64_t>(r.body.size())) + r.body);
  end_exchange(r.status);
}

void HttpConnection::begin_stream(ConnectionExchange* ex, const std::string& content_type, const HttpHeaders& headers) {
  if (ex != current_.get() || ex->ended || ex->streaming || closed_) return;
  ex->streaming = true;
  ex->record.status = 200;
  queue(head(200, content_type, headers, -1));
}

void HttpConnection::write_chunk(ConnectionExchange* ex, const std::string& data) {
  if (ex != current_.get() || ex->ended || !ex->streaming || closed_ || data.empty()) return;
  queue(fmt::format("{:x}\r\n", data.size()) + data + "\r\n");
}

void HttpConnection::end_stream(ConnectionExchange* ex) {
  if (ex != current_.get() || ex->ended || !ex->streaming || closed_) return;
  queue("0\r\n\r\n");
  end_exchange(200);
}

void HttpConnection::set_on_close(ConnectionExchange* ex, std::function<void()> fn) {
  if (ex->ended) return;
  if (closed_ || ex != current_.get()) {
    fn();
    return;
  }
  ex->on_close = std::move(fn);
}

void HttpConnection::end_exchange(int status) {
  ConnectionExchange& ex = *current_;
  ex.ended = true;
  ex.on_close = nullptr;
  ex.record.status = status;
  ex.record.seconds = static_cast<double>(now_ns() - ex.start_ns) * 1e-9;
  if (state_->options.on_exchange) state_->options.on_exchange(ex.record);
  response_done_ = true;
  if (!writing_ && pending_.empty()) after_response();
}

void HttpConnection::queue(std::string bytes) {
  if (closed_) return;
  pending_ += bytes;
  if (static_cast<int64_t>(pending_.size()) > state_->options.max_buffered_bytes) {
    log_warn("closing a connection with {} unsent bytes (client not reading)", pending_.size());
    return close();
  }
  if (!writing_) flush();
}

void HttpConnection::flush() {
  if (closed_ || pending_.empty()) return;
  writing_ = true;
  inflight_.swap(pending_);
  pending_.clear();
  write_timer_.expires_after(std::chrono::milliseconds(static_cast<int64_t>(state_->options.write_timeout_s * 1000)));
  write_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (!ec) self->close();
  });
  asio::async_write(socket_, asio::buffer(inflight_),
                    [self = shared_from_this()](beast::error_code ec, size_t) { self->on_write(ec); });
}

void HttpConnection::on_write(beast::error_code ec) {
  writing_ = false;
  inflight_.clear();
  write_timer_.cancel();
  if (ec) return close();
  if (!pending_.empty()) return flush();
  if (response_done_) after_response();
}

void HttpConnection::after_response() {
  if (closed_) return;
  if (close_after_response_ || !keep_alive_ || state_->draining.load()) return linger_close();
  if (watching_) {
    want_next_ = true;
    beast::error_code ignored;
    socket_.cancel(ignored);
    return;
  }
  read_request();
}

void HttpConnection::fail_request(int status, const std::string& message) {
  keep_alive_ = false;
  HttpResponse r = state_->options.error_response(status, message);
  HttpExchangeRecord rec{"", "", status, 0, false};
  current_ = std::make_shared<ConnectionExchange>(weak_from_this(), strand_, std::move(rec));
  current_->start_ns = now_ns();
  close_after_response_ = true;
  respond(current_.get(), std::move(r));
}

// Half-closes, then reads and discards what the client still sends for a moment, so
// that unread request bytes do not turn our close into a reset that loses the reply.
void HttpConnection::linger_close() {
  if (closed_) return;
  beast::error_code ignored;
  socket_.shutdown(Tcp::socket::shutdown_send, ignored);
  if (watching_) {
    socket_.cancel(ignored);
  }
  arm_timer(kLingerSeconds);
  drain_buf_.resize(kWatchChunk);
  auto drain = std::make_shared<std::function<void(beast::error_code, size_t)>>();
  *drain = [self = shared_from_this(), drain](beast::error_code ec, size_t) {
    if (ec || self->closed_) {
      self->close();
      *drain = nullptr;  // breaks the self-reference
      return;
    }
    self->socket_.async_read_some(asio::buffer(self->drain_buf_), *drain);
  };
  socket_.async_read_some(asio::buffer(drain_buf_), *drain);
}

void HttpConnection::close() {
  if (closed_) return;
  closed_ = true;
  beast::error_code ignored;
  socket_.shutdown(Tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  timer_.cancel();
  write_timer_.cancel();
  if (current_ && !current_->ended) {
    ConnectionExchange& ex = *current_;
    ex.ended = true;
    ex.record.client_gone = true;
    ex.record.status = ex.streaming ? 200 : 499;
    ex.record.seconds = static_cast<double>(now_ns() - ex.start_ns) * 1e-9;
    if (state_->options.on_exchange) state_->options.on_exchange(ex.record);
    auto fn = std::move(ex.on_close);
    ex.on_close = nullptr;
    if (fn) fn();
  }
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->connections.erase(id_);
  }
  state_->open.fetch_sub(1);
  if (state_->options.on_connection) state_->options.on_connection(-1);
}

}  // namespace llms
