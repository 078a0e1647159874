// The transport alone (no model): a stream producer that waits on when_writable() is
// held back by a client that does not read — the server's buffer stays bounded — and
// the stall deadline then closes the connection and runs on_close; a client that
// reads gets every byte in order.
#include "server/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "base/clock.h"

namespace llms {
namespace {

constexpr size_t kPiece = 1024;
constexpr size_t kTotal = 4 << 20;

// Writes kTotal bytes in kPiece pieces, each only once the exchange has room.
struct Producer : std::enable_shared_from_this<Producer> {
  std::shared_ptr<HttpExchange> ex;
  std::atomic<size_t> written{0};
  std::atomic<bool> closed{false};

  void next() {
    if (closed.load()) return;
    if (written.load() >= kTotal) return ex->end_stream();
    std::string piece(kPiece, static_cast<char>('a' + (written.load() / kPiece) % 26));
    written.fetch_add(kPiece);
    ex->write(std::move(piece));
    ex->when_writable([self = shared_from_this()] { self->next(); });
  }
};

struct Fixture {
  std::shared_ptr<Producer> producer = std::make_shared<Producer>();
  std::unique_ptr<HttpServer> server;

  explicit Fixture(double stall_s) {
    HttpServerOptions o;
    o.port = 0;
    o.stall_timeout_s = stall_s;
    o.stream_buffer_bytes = 4096;
    auto p = producer;
    server = std::make_unique<HttpServer>(o, [p](HttpRequest, std::shared_ptr<HttpExchange> ex) {
      p->ex = ex;
      ex->set_on_close([p] { p->closed.store(true); });
      ex->begin_stream("text/plain");
      p->next();
    });
    EXPECT_TRUE(server->start().ok());
  }
  // The exchange the producer holds must go while the server's I/O context exists,
  // and only once its threads stopped touching it.
  ~Fixture() {
    server->stop(0);
    producer->ex.reset();
  }
};

int connect_client(int port, int receive_buffer) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  const std::string req = "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n";
  EXPECT_EQ(::send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
  return fd;
}

bool poll_until(const std::function<bool()>& cond, double timeout_s) {
  const int64_t deadline = now_ns() + static_cast<int64_t>(timeout_s * 1e9);
  while (now_ns() < deadline && !cond()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling interval, not synchronization
  }
  return cond();
}

TEST(HttpServerTest, ProducerWaitsForAClientThatDoesNotReadUntilTheStallCloses) {
  Fixture f(/*stall_s=*/1.0);
  const int fd = connect_client(f.server->port(), 4096);
  ASSERT_TRUE(poll_until([&] { return f.producer->closed.load(); }, 30));
  // What the producer could write: the socket buffers of both ends, the server's
  // buffer and one piece — far below the 4 MiB it wanted to write.
  EXPECT_LT(f.producer->written.load(), size_t{256} << 10);
  EXPECT_GT(f.producer->written.load(), size_t{4096});
  ::close(fd);
  EXPECT_TRUE(poll_until([&] { return f.server->open_connections() == 0; }, 10));
}

TEST(HttpServerTest, AClientThatReadsGetsEveryByteInOrder) {
  Fixture f(/*stall_s=*/5.0);
  const int fd = connect_client(f.server->port(), 4096);
  std::string got;
  char buf[65536];
  const int64_t deadline = now_ns() + static_cast<int64_t>(60e9);
  while (got.find("\r\n0\r\n\r\n") == std::string::npos && now_ns() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  EXPECT_FALSE(f.producer->closed.load());
  // De-chunk and check every piece's letter.
  size_t pos = got.find("\r\n\r\n") + 4, pieces = 0;
  while (true) {
    const size_t eol = got.find("\r\n", pos);
    ASSERT_NE(eol, std::string::npos);
    const size_t size = std::stoul(got.substr(pos, eol - pos), nullptr, 16);
    if (size == 0) break;
    ASSERT_EQ(size, kPiece);
    const std::string piece = got.substr(eol + 2, size);
    ASSERT_EQ(piece, std::string(kPiece, static_cast<char>('a' + pieces % 26))) << "piece " << pieces;
    ++pieces;
    pos = eol + 2 + size + 2;
  }
  EXPECT_EQ(pieces * kPiece, kTotal);
}

}  // namespace
}  // namespace llms
