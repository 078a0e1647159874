#include "server/http_server.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <future>

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
// thousands of streams fit.
void raise_fd_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
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
  raise_fd_limit();
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
    socket.set_option(Tcp::no_delay(true), ec);
    auto conn = std::make_shared<HttpConnection>(std::move(socket), strand, state_);
    uint64_t id = 0;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      id = state_->next_id++;
      state_->connections.emplace(id, conn);
    }
    conn->start(id);
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
