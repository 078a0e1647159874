#include "kvevents/kv_event_publisher.h"

#include <fmt/format.h>

#include <zmq.hpp>

#include <chrono>

#include "base/log.h"

namespace llms {

struct KvEventPublisher::Socket {
  zmq::context_t context{1};
  zmq::socket_t socket{context, zmq::socket_type::pub};
};

KvEventPublisher::KvEventPublisher(const KvEventPublisherOptions& o, Registry& registry)
    : topic_(fmt::format("kv@{}@{}", o.pod, o.model)),
      endpoint_(o.endpoint),
      capacity_(o.queue_capacity),
      socket_(std::make_unique<Socket>()),
      published_(registry.counter("llmserve_kv_events_published_total",
                                  "KV-cache block events sent to the kv_events subscribers.")),
      dropped_(registry.counter("llmserve_kv_events_dropped_total",
                                "KV-cache block events dropped because the publisher's queue was full.")) {
  if (o.sha256_cbor) keys_.emplace(o.hash_seed);
}

Result<std::shared_ptr<KvEventPublisher>> KvEventPublisher::create(const KvEventPublisherOptions& o,
                                                                   Registry& registry) {
  if (o.endpoint.rfind("tcp://", 0) != 0 && o.endpoint.rfind("ipc://", 0) != 0) {
    return invalid_argument(fmt::format("kv_events: \"{}\" is not tcp://HOST:PORT or ipc://PATH", o.endpoint));
  }
  if (o.queue_capacity == 0) return invalid_argument("kv_events: the queue needs room for one event");
  std::shared_ptr<KvEventPublisher> p(new KvEventPublisher(o, registry));
  try {
    p->socket_->socket.set(zmq::sockopt::linger, 1000);
    p->socket_->socket.bind(o.endpoint);
    p->endpoint_ = p->socket_->socket.get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    return unavailable(fmt::format("kv_events: cannot bind {}: {}", o.endpoint, e.what()));
  }
  p->thread_ = std::thread([raw = p.get()] { raw->run(); });
  log_info("kv_events: publishing block events on {} (topic {})", p->endpoint_, p->topic_);
  return p;
}

KvEventPublisher::~KvEventPublisher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void KvEventPublisher::push(KvEvent e) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.size() >= capacity_) {
      ++dropped_since_send_;
      dropped_.inc();
      return;
    }
    queue_.push_back(std::move(e));
  }
  cv_.notify_one();
}

void KvEventPublisher::on_stored(const Hash128& hash, const std::optional<Hash128>& parent,
                                 std::span<const int32_t> tokens, int block_size, uint64_t salt) {
  KvEvent e;
  e.kind = KvEvent::Kind::kStored;
  e.hashes = {wire_hash(hash)};
  if (parent) e.parent = wire_hash(*parent);
  e.tokens.assign(tokens.begin(), tokens.end());
  e.block_size = block_size;
  e.salt = salt;
  push(std::move(e));
}

void KvEventPublisher::on_removed(const Hash128& hash) {
  KvEvent e;
  e.kind = KvEvent::Kind::kRemoved;
  e.hashes = {wire_hash(hash)};
  push(std::move(e));
}

void KvEventPublisher::on_cleared() {
  KvEvent e;
  e.kind = KvEvent::Kind::kCleared;
  push(std::move(e));
}

void KvEventPublisher::run() {
  uint64_t seq = 0;
  std::vector<KvEvent> batch;
  for (;;) {
    uint64_t dropped = 0;
    bool stopping = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      batch.swap(queue_);
      dropped = dropped_since_send_;
      dropped_since_send_ = 0;
      stopping = stop_;
    }
    if (dropped > 0) ++seq;  // the gap tells subscribers that events were lost
    if (keys_ && !batch.empty()) batch = keys_->translate(batch);
    if (!batch.empty()) {
      const std::string payload = encode_event_batch(std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(), batch);
      const std::string seq_frame = encode_sequence_number(seq++);
      try {
        auto& s = socket_->socket;
        s.send(zmq::buffer(topic_), zmq::send_flags::sndmore);
        s.send(zmq::buffer(seq_frame), zmq::send_flags::sndmore);
        s.send(zmq::buffer(payload), zmq::send_flags::none);
        published_.inc(static_cast<double>(batch.size()));
      } catch (const zmq::error_t& e) {
        log_warn("kv_events: send failed: {}", e.what());
      }
      batch.clear();
    }
    if (stopping) {
      std::lock_guard<std::mutex> lock(mu_);
      if (queue_.empty()) return;
    }
  }
}

}  // namespace llms
