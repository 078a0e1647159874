#include "server/grammar_pool.h"

#include <algorithm>
#include <string>

namespace llms {

GrammarPool::GrammarPool(int num_threads, int max_queued, Registry& registry)
    : max_queued_(static_cast<size_t>(std::max(0, max_queued))),
      compiles_(registry.counter_family("llmserve_grammar_compiles_total",
                                        "Output grammars compiled for requests, by result: ok, invalid, over_budget "
                                        "(400), cancelled (the client left), refused (queue full, 503).",
                                        {"result"})),
      duration_(registry.histogram("llmserve_grammar_compile_duration_seconds",
                                   "Time from a grammar's submission to its compile's end (queue included).",
                                   latency_buckets())),
      running_gauge_(registry.gauge("llmserve_grammar_compiles_running", "Grammar compiles running now.")) {
  for (int i = 0; i < std::max(1, num_threads); ++i) threads_.emplace_back([this] { worker(); });
}

GrammarPool::~GrammarPool() { stop(); }

bool GrammarPool::submit(CancelFlag cancel, std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || queue_.size() >= max_queued_ + threads_.size() - running_.size()) return false;
    queue_.push_back(Job{std::move(cancel), std::move(job)});
  }
  cv_.notify_one();
  return true;
}

void GrammarPool::count(std::string_view result, double seconds) {
  compiles_.with({std::string(result)}).inc();
  duration_.observe(seconds);
}

void GrammarPool::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    for (const Job& j : queue_) j.cancel->store(true);
    for (const CancelFlag& f : running_) f->store(true);
  }
  cv_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

void GrammarPool::worker() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    Job job = std::move(queue_.front());
    queue_.pop_front();
    if (stopping_) job.cancel->store(true);
    running_.push_back(job.cancel);
    running_gauge_.add(1);
    lock.unlock();
    job.fn();
    job.fn = nullptr;  // its captures (the exchange) go before the lock is taken again
    lock.lock();
    running_.erase(std::find(running_.begin(), running_.end(), job.cancel));
    running_gauge_.add(-1);
  }
}

}  // namespace llms
