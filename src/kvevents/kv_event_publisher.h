// KvEventPublisher: publishes the prefix cache's block events over ZeroMQ PUB in
// vLLM's format (kv_event_encoding.h), topic "kv@<pod>@<model>", for routers that
// track which replica holds which prefix (llm-d's precise prefix-cache scorer).
//
// The engine thread only appends to a bounded queue; a thread of the publisher
// batches what has queued and sends it. When the queue is full, events are dropped
// and counted (llmserve_kv_events_dropped_total), and the next message's sequence
// number skips one, so a subscriber sees the gap; otherwise sequence numbers are
// gapless from 0.
//
// Thread-safety: the listener calls may come from any thread (one engine thread per
// loaded version); the publisher's own thread alone touches the socket.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "kv/kv_events.h"
#include "kvevents/block_keys.h"
#include "kvevents/kv_event_encoding.h"
#include "metrics/metrics.h"

namespace llms {

struct KvEventPublisherOptions {
  std::string endpoint;                 // tcp://HOST:PORT (bound), or ipc://PATH
  std::string pod;                      // the topic's pod id
  std::string model;                    // the topic's model name
  size_t queue_capacity = 1 << 16;      // events held before dropping
  bool sha256_cbor = false;             // block keys as vLLM's sha256_cbor (block_keys.h), not XXH3
  std::string hash_seed;                // its seed
};

class KvEventPublisher : public KvEventListener {
 public:
  // Binds the socket; an endpoint that cannot be bound is an error.
  static Result<std::shared_ptr<KvEventPublisher>> create(const KvEventPublisherOptions& options, Registry& registry);
  ~KvEventPublisher() override;  // sends what is queued, then closes

  void on_stored(const Hash128& hash, const std::optional<Hash128>& parent, std::span<const int32_t> tokens,
                 int block_size, uint64_t salt) override;
  void on_removed(const Hash128& hash) override;
  void on_cleared() override;

  const std::string& topic() const { return topic_; }
  // The endpoint as bound (tcp://HOST:0 becomes the port the system chose).
  const std::string& endpoint() const { return endpoint_; }

 private:
  struct Socket;
  KvEventPublisher(const KvEventPublisherOptions& options, Registry& registry);
  void push(KvEvent e);
  void run();

  std::string topic_;
  std::string endpoint_;
  size_t capacity_;
  std::unique_ptr<Socket> socket_;
  Counter& published_;
  Counter& dropped_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<KvEvent> queue_;
  uint64_t dropped_since_send_ = 0;
  std::optional<Sha256CborKeys> keys_;  // sha256_cbor: the publisher thread's translation
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace llms
