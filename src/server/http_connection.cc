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

std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

}  // namespace

HttpConnection::HttpConnection(Tcp::socket socket, Strand strand, std::shared_ptr<HttpServerState> state,
                               asio::ip::address client)
    : socket_(std::move(socket)),
      strand_(std::move(strand)),
      state_(std::move(state)),
      client_(std::move(client)),
      timer_(strand_),
      write_timer_(strand_) {}

HttpConnection::~HttpConnection() = default;

void HttpConnection::start(uint64_t id) {
  id_ = id;
  state_->open.fetch_add(1);
  if (state_->options.on_connection) state_->options.on_connection(+1);
  // A small kernel send buffer keeps what a client that stopped reading can absorb
  // bounded, so that its stall shows up here within a few chunks.
  beast::error_code ignored;
  socket_.set_option(asio::socket_base::send_buffer_size(static_cast<int>(state_->options.stream_buffer_bytes)), ignored);
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

// ---- Reading: idle → header → body, each phase with its deadline. ----

void HttpConnection::arm_read_timer(ReadPhase phase, double seconds) {
  phase_ = phase;
  const uint64_t gen = ++read_timer_gen_;
  timer_.expires_after(millis(seconds));
  timer_.async_wait([self = shared_from_this(), gen](beast::error_code ec) {
    if (!ec && gen == self->read_timer_gen_) self->on_read_timeout();
  });
}

void HttpConnection::cancel_read_timer() {
  ++read_timer_gen_;
  phase_ = ReadPhase::kNone;
  timer_.cancel();
}

void HttpConnection::on_read_timeout() {
  if (closed_) return;
  if (phase_ == ReadPhase::kHeader || phase_ == ReadPhase::kBody) {
    // The pending read ends with operation_aborted; its handler answers 408.
    state_->event(phase_ == ReadPhase::kHeader ? HttpEvent::kHeaderTimeout : HttpEvent::kBodyTimeout);
    read_timed_out_ = true;
    beast::error_code ignored;
    socket_.cancel(ignored);
    return;
  }
  close();  // an idle keep-alive connection, or the end of a lingering close
}

void HttpConnection::read_request() {
  if (closed_) return;
  current_.reset();
  // The answered request's flag, cleared before the next is read: a write that ends
  // while it is read (an interim "100 Continue") must not be taken for the end of a
  // response and start yet another read under the one in flight.
  response_done_ = false;
  parser_.emplace();
  parser_->header_limit(kMaxHeaderBytes);
  parser_->body_limit(static_cast<uint64_t>(state_->options.max_body_bytes));
  read_timed_out_ = false;
  if (buffer_.size() > 0) return read_header();  // pipelined: the request has begun
  arm_read_timer(ReadPhase::kIdle, state_->options.idle_timeout_s);
  socket_.async_wait(Tcp::socket::wait_read, [self = shared_from_this()](beast::error_code ec) { self->on_readable(ec); });
}

void HttpConnection::on_readable(beast::error_code ec) {
  if (closed_) return;
  if (ec) {
    cancel_read_timer();
    return close();
  }
  read_header();
}

void HttpConnection::read_header() {
  arm_read_timer(ReadPhase::kHeader, state_->options.header_timeout_s);
  http::async_read_header(socket_, buffer_, *parser_,
                          [self = shared_from_this()](beast::error_code ec, size_t) { self->on_header(ec); });
}

void HttpConnection::on_header(beast::error_code ec) {
  if (closed_) return;
  if (read_timed_out_) {
    return fail_request(408, fmt::format("the request headers did not arrive within {} s (header_timeout)",
                                         state_->options.header_timeout_s));
  }
  if (ec) {
    cancel_read_timer();
    if (peer_gone(ec)) return close();
    if (ec == http::error::header_limit) return fail_request(431, "request headers are too large");
    if (ec == http::error::body_limit) {
      return fail_request(413, fmt::format("the request body is larger than {} bytes (max_body_bytes)",
                                           state_->options.max_body_bytes));
    }
    return fail_request(400, fmt::format("malformed HTTP request: {}", ec.message()));
  }
  const auto len = parser_->content_length();
  if (len && *len > static_cast<uint64_t>(state_->options.max_body_bytes)) {
    cancel_read_timer();
    return fail_request(413, fmt::format("the request body has {} bytes; the limit is {} (max_body_bytes)", *len,
                                         state_->options.max_body_bytes));
  }
  arm_read_timer(ReadPhase::kBody, state_->options.body_timeout_s);
  if (beast::iequals(parser_->get()[http::field::expect], "100-continue")) queue("HTTP/1.1 100 Continue\r\n\r\n");
  http::async_read(socket_, buffer_, *parser_,
                   [self = shared_from_this()](beast::error_code ec2, size_t) { self->on_body(ec2); });
}

void HttpConnection::on_body(beast::error_code ec) {
  if (closed_) return;
  cancel_read_timer();
  if (read_timed_out_) {
    return fail_request(408, fmt::format("the request body did not arrive within {} s (body_timeout)",
                                         state_->options.body_timeout_s));
  }
  if (ec == http::error::body_limit) {
    return fail_request(413, fmt::format("the request body is larger than {} bytes (max_body_bytes)",
                                         state_->options.max_body_bytes));
  }
  if (ec) {
    if (peer_gone(ec)) return close();
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
  http10_ = msg.version() < 11;
  response_done_ = false;
  HttpExchangeRecord rec{req.method, req.path, 0, 0, false, ""};
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

// ---- Writing ----

std::string HttpConnection::head(int status, const std::string& content_type, const HttpHeaders& extra,
                                 int64_t content_length) {
  const bool keep = keep_alive_ && !state_->draining.load() && !close_after_response_;
  if (!keep) close_after_response_ = true;
  return http_response_head(status, content_type, extra, content_length, keep);
}

// A response to HEAD has no body (RFC 9110 9.3.2): writing one would be read as the
// start of the next response by a client that pipelines.
void HttpConnection::note_headers(ConnectionExchange* ex, const HttpHeaders& headers) {
  const std::string& name = state_->options.recorded_header;
  if (name.empty()) return;
  for (const auto& [k, v] : headers) {
    if (lower(k) == name) ex->record.header_value = v;
  }
}

void HttpConnection::respond(ConnectionExchange* ex, HttpResponse r) {
  if (ex != current_.get() || ex->ended || ex->streaming || closed_) return;
  note_headers(ex, r.headers);
  std::string bytes = head(r.status, r.content_type, r.headers, static_cast<int64_t>(r.body.size()));
  if (ex->record.method != "HEAD") bytes += r.body;
  queue(std::move(bytes));
  end_exchange(r.status);
}

void HttpConnection::begin_stream(ConnectionExchange* ex, const std::string& content_type, const HttpHeaders& headers) {
  if (ex != current_.get() || ex->ended || ex->streaming || closed_) return;
  ex->streaming = true;
  ex->record.status = 200;
  note_headers(ex, headers);
  if (http10_) close_after_response_ = true;  // the close ends its body
  queue(head(200, content_type, headers, http10_ ? kCloseDelimitedBody : kChunkedBody));
}

void HttpConnection::write_chunk(ConnectionExchange* ex, const std::string& data) {
  if (ex != current_.get() || ex->ended || !ex->streaming || closed_ || data.empty()) return;
  if (ex->record.method == "HEAD") return;
  queue(http10_ ? data : fmt::format("{:x}\r\n", data.size()) + data + "\r\n");
}

void HttpConnection::end_stream(ConnectionExchange* ex) {
  if (ex != current_.get() || ex->ended || !ex->streaming || closed_) return;
  if (ex->record.method != "HEAD" && !http10_) queue("0\r\n\r\n");
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

void HttpConnection::when_writable(ConnectionExchange* ex, std::function<void()> fn) {
  if (closed_ || ex != current_.get() || ex->ended || unsent() < state_->options.stream_buffer_bytes) {
    asio::post(strand_, std::move(fn));
    return;
  }
  if (writer_) asio::post(strand_, std::move(writer_));  // one producer per exchange; never drop one
  writer_ = std::move(fn);
}

void HttpConnection::wake_writer() {
  if (writer_ && (closed_ || unsent() < state_->options.stream_buffer_bytes)) {
    asio::post(strand_, std::move(writer_));
    writer_ = nullptr;
  }
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
  inflight_off_ = 0;
  arm_stall_timer();
  write_some();
}

void HttpConnection::write_some() {
  socket_.async_write_some(asio::buffer(inflight_.data() + inflight_off_, inflight_.size() - inflight_off_),
                           [self = shared_from_this()](beast::error_code ec, size_t n) { self->on_write(ec, n); });
}

// Every byte the socket takes re-arms the stall deadline: a slow reader is fine, one
// that reads nothing at all for stall_timeout_s is not.
void HttpConnection::arm_stall_timer() {
  const uint64_t gen = ++write_timer_gen_;
  write_timer_.expires_after(millis(state_->options.stall_timeout_s));
  write_timer_.async_wait([self = shared_from_this(), gen](beast::error_code ec) {
    if (ec || gen != self->write_timer_gen_ || self->closed_) return;
    log_info("closing a connection whose client took no response bytes for {} s ({} unsent; stream_stall_timeout)",
             self->state_->options.stall_timeout_s, self->unsent());
    self->state_->event(HttpEvent::kWriteStall);
    self->close();
  });
}

void HttpConnection::on_write(beast::error_code ec, size_t n) {
  if (ec) {
    writing_ = false;
    return close();
  }
  inflight_off_ += n;
  if (inflight_off_ < inflight_.size()) {
    if (n > 0) arm_stall_timer();
    wake_writer();
    return write_some();
  }
  writing_ = false;
  inflight_.clear();
  inflight_off_ = 0;
  ++write_timer_gen_;
  write_timer_.cancel();
  wake_writer();
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
  HttpExchangeRecord rec{"", "", status, 0, false, ""};
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
  arm_read_timer(ReadPhase::kLinger, kLingerSeconds);
  drain_buf_.resize(kWatchChunk);
  drain_some();
}

// Each read's handler holds the connection, and nothing else does: a server stopped
// while a read is pending destroys the handler and with it the last reference.
void HttpConnection::drain_some() {
  socket_.async_read_some(asio::buffer(drain_buf_), [self = shared_from_this()](beast::error_code ec, size_t) {
    if (ec || self->closed_) return self->close();
    self->drain_some();
  });
}

void HttpConnection::close() {
  if (closed_) return;
  closed_ = true;
  beast::error_code ignored;
  socket_.shutdown(Tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  cancel_read_timer();
  ++write_timer_gen_;
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
  wake_writer();
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->connections.erase(id_);
    auto it = state_->per_client.find(client_);
    if (it != state_->per_client.end() && --it->second <= 0) state_->per_client.erase(it);
  }
  state_->open.fetch_sub(1);
  if (state_->options.on_connection) state_->options.on_connection(-1);
}

}  // namespace llms
