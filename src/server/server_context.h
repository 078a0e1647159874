// ServerContext: what the request handlers share — the engine, the tokenizer, the
// configuration, the served model's name, the metrics, the draining flag, and the
// count of completion requests in flight (graceful shutdown waits on it).
//
// Thread-safety: the references are to thread-safe or immutable objects; the
// counters and flags are atomic or under the internal mutex. Any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>

#include "engine/engine.h"
#include "server/server_config.h"
#include "server/server_metrics.h"
#include "tokenizer/tokenizer.h"

namespace llms {

class ServerContext {
 public:
  ServerContext(Engine& engine, const Tokenizer& tokenizer, const ServeConfig& config, ServerMetrics& metrics,
                std::string chat_template);

  Engine& engine;
  const Tokenizer& tokenizer;
  const ServeConfig& config;
  ServerMetrics& metrics;
  const std::string model_name;
  const std::string chat_template;  // resolved: "" (the model's), a name, or "plain"
  const int64_t created;            // unix seconds at start

  // A fresh response id: prefix + 24 hex digits.
  std::string next_id(const char* prefix);

  void set_draining() { draining_.store(true); }
  bool draining() const { return draining_.load(); }

  void request_started();
  void request_finished();
  int active_requests() const;
  // Waits until no request is in flight or `deadline_ns` (now_ns clock) passes.
  bool wait_idle(int64_t deadline_ns);

 private:
  std::atomic<bool> draining_{false};
  std::atomic<uint64_t> next_id_{1};
  uint64_t id_salt_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int active_ = 0;
};

}  // namespace llms
