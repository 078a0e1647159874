#include "server/http_server.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <future>
#include <optional>

#include "base/clock.h"
#include "base/log.h"
#include "server/http_connection.h"

namespace llms {

struct HttpServer::Io {
  asio::io_context ioc;
  asio::executor_work_guard<asio::io_context::executor_type> work{ioc.get_executor()};
  Strand accept_strand{asio::make_strand(ioc)};
  Tcp::acceptor acceptor{accept_strand};
  asio::steady_timer retry{accept_strand};
  bool accepting = false;
};

namespace {

// Each connection is a file descriptor: lift the soft limit to the hard one so that
// thousands of streams fit, and keep max_connections below it (with room for the
// model, logs and the accept itself) so that the cap, not EMFILE, says no.
void raise_fd_limit(HttpServerOptions& o) {
  constexpr int kReservedFds = 64;
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
  }
  const auto room = static_cast<int64_t>(std::min<rlim_t>(rl.rlim_cur, 1 << 30)) - kReservedFds;
  if (room < o.max_connections) {
    log_warn("max_connections {} lowered to {}: the process may open {} files", o.max_connections, room, rl.rlim_cur);
    o.max_connections = static_cast<int>(std::max<int64_t>(1, room));
  }
}

// Writes a 503 without reading the request (one non-blocking write: a refused client
// must not hold the accept loop) and closes.
void refuse(HttpServerState& state, Tcp::socket& socket, HttpEvent why) {
  state.event(why);  // counted before the client can see the answer
  const bool total = why == HttpEvent::kRefusedTotal;
  const std::string message =
      total ? fmt::format("the server has {} open connections, its limit (max_connections)", state.options.max_connections)
            : fmt::format("this client has {} open connections, the limit per client (max_connections_per_client)",
                          state.options.max_connections_per_client);
  const HttpResponse r = state.options.error_response(503, message);
  const std::string bytes =
      http_response_head(503, r.content_type, {{"Retry-After", "1"}}, static_cast<int64_t>(r.body.size()), false) + r.body;
  boost::system::error_code ignored;
  socket.non_blocking(true, ignored);
  socket.write_some(asio::buffer(bytes), ignored);
  socket.shutdown(Tcp::socket::shutdown_send, ignored);
  socket.close(ignored);
}

// Starts a connection for `socket`, or refuses it when a connection cap is reached.
void admit(const std::shared_ptr<HttpServerState>& state_ptr, Tcp::socket socket, Strand strand) {
  HttpServerState& state = *state_ptr;
  boost::system::error_code ec;
  const auto peer = socket.remote_endpoint(ec);
  if (ec) return;  // already gone
  socket.set_option(Tcp::no_delay(true), ec);
  const HttpServerOptions& o = state.options;
  std::optional<HttpEvent> refused;
  std::shared_ptr<HttpConnection> conn;
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(state.mu);
    const auto it = state.per_client.find(peer.address());
    const int from_client = it == state.per_client.end() ? 0 : it->second;
    if (static_cast<int>(state.connections.size()) >= o.max_connections) {
      refused = HttpEvent::kRefusedTotal;
    } else if (o.max_connections_per_client > 0 && from_client >= o.max_connections_per_client) {
      refused = HttpEvent::kRefusedPerClient;
    } else {
      conn = std::make_shared<HttpConnection>(std::move(socket), strand, state_ptr, peer.address());
      id = state.next_id++;
      state.connections.emplace(id, conn);
      ++state.per_client[peer.address()];
    }
  }
  if (refused) return refuse(state, socket, *refused);
  conn->start(id);
}

}  // namespace

HttpServer::HttpServer(HttpServerOptions options, HttpHandler handler)
    : state_(std::make_shared<HttpServerState>()), io_(std::make_unique<Io>()) {
  state_->options = std::move(options);
  state_->handler = std::move(handler);
  if (!state_->options.error_response) {
    state_->options.error_response = [](int status, const std::string& message) {
      return HttpResponse{status, "text/plain", message + "\n", {}};
    };
  }
}

HttpServer::~HttpServer() { stop(0); }

Status HttpServer::start() {
  raise_fd_limit(state_->options);
  boost::system::error_code ec;
  const auto addr = asio::ip::make_address(state_->options.host, ec);
  if (ec) return invalid_argument(fmt::format("host: '{}' is not an IP address", state_->options.host));
  const Tcp::endpoint ep(addr, static_cast<unsigned short>(state_->options.port));
  auto& acc = io_->acceptor;
  acc.open(ep.protocol(), ec);
  if (!ec) acc.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acc.bind(ep, ec);
  if (!ec) acc.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return unavailable(fmt::format("cannot listen on {}:{}: {}", state_->options.host, state_->options.port, ec.message()));
  }
  port_ = acc.local_endpoint().port();
  io_->accepting = true;
  asio::post(io_->accept_strand, [this] { accept_next(); });
  const int n = std::max(1, state_->options.io_threads);
  for (int i = 0; i < n; ++i) threads_.emplace_back([this] { io_->ioc.run(); });
  return ok_status();
}

void HttpServer::accept_next() {
  if (!io_->accepting) return;
  auto strand = asio::make_strand(io_->ioc);
  io_->acceptor.async_accept(strand, [this, strand](boost::system::error_code ec, Tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !io_->accepting) return;
    if (ec) {
      // Out of file descriptors or a transient error: pause instead of spinning.
      log_warn("accept failed: {}", ec.message());
      io_->retry.expires_after(std::chrono::milliseconds(50));
      io_->retry.async_wait([this](boost::system::error_code e) {
        if (!e) accept_next();
      });
      return;
    }
    admit(state_, std::move(socket), strand);
    accept_next();
  });
}

void HttpServer::stop_accepting() {
  if (threads_.empty()) return;
  std::promise<void> done;
  asio::post(io_->accept_strand, [this, &done] {
    io_->accepting = false;
    boost::system::error_code ignored;
    io_->acceptor.close(ignored);
    io_->retry.cancel();
    done.set_value();
  });
  done.get_future().wait();
}

void HttpServer::set_draining() {
  state_->draining.store(true);
  std::vector<std::shared_ptr<HttpConnection>> conns;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    for (auto& [id, w] : state_->connections) {
      if (auto c = w.lock()) conns.push_back(std::move(c));
    }
  }
  for (auto& c : conns) c->close_when_idle();
}

int HttpServer::open_connections() const { return state_->open.load(); }

void HttpServer::stop(double grace_s) {
  if (stopped_) return;
  stopped_ = true;
  if (!threads_.empty()) {
    stop_accepting();
    set_draining();
    const int64_t deadline = now_ns() + static_cast<int64_t>(grace_s * 1e9);
    while (state_->open.load() > 0 && now_ns() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // bounded wait for sockets to flush
    }
  }
  io_->work.reset();
  io_->ioc.stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

}  // namespace llms
