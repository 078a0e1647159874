// GrammarPool: the threads that compile requests' output grammars (regex, grammar,
// response_format json_schema, tools), so that no grammar ever runs on an HTTP I/O
// thread: a compile may take up to its budget (ServerConfig::grammar_budget), and an
// I/O thread held that long would stall every connection it serves. They also read
// again the LoRA adapters --lora-memory had unloaded, for the requests that name them
// (with_adapter(), endpoints.h), for the same reason; those jobs count in
// llmserve_grammar_compiles_running while they run, and nowhere else.
//
// A bounded queue in front of a fixed set of threads: submit() refuses (false) when
// grammar_queue jobs already wait, and the server answers 503. Each job carries the
// cancellation flag its compile watches (GrammarBudget::cancel): the request's
// handler sets it when the client hangs up; stop() sets every flag, runs what is
// queued (each job sees its flag and returns at once) and joins the threads.
//
// Metrics: llmserve_grammar_compiles_total{result},
// llmserve_grammar_compile_duration_seconds (count()) and llmserve_grammar_compiles_running.
//
// Thread-safety: submit(), count() and stop() from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "metrics/metrics.h"

namespace llms {

class GrammarPool {
 public:
  using CancelFlag = std::shared_ptr<std::atomic<bool>>;

  GrammarPool(int num_threads, int max_queued, Registry& registry);
  ~GrammarPool();
  GrammarPool(const GrammarPool&) = delete;
  GrammarPool& operator=(const GrammarPool&) = delete;

  // Queues `job` (run on a pool thread); false when the queue is full or the pool stopped.
  bool submit(CancelFlag cancel, std::function<void()> job);
  // Records a compile's outcome: ok, invalid, over_budget, cancelled or refused (queue full).
  void count(std::string_view result, double seconds);
  void stop();

 private:
  struct Job {
    CancelFlag cancel;
    std::function<void()> fn;
  };
  void worker();

  const size_t max_queued_;
  Family<Counter>& compiles_;
  Histogram& duration_;
  Gauge& running_gauge_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  std::vector<CancelFlag> running_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace llms
