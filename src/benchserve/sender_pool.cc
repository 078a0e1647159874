#include "benchserve/sender_pool.h"

namespace llms::benchserve {

SenderPool::SenderPool(std::string base_url, std::string api_key, double timeout_s)
    : base_url_(std::move(base_url)), api_key_(std::move(api_key)), timeout_s_(timeout_s) {}

SenderPool::~SenderPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void SenderPool::submit(Task task) {
  std::unique_lock<std::mutex> lock(mu_);
  tasks_.push_back(std::move(task));
  // Idle threads not yet woken by earlier tasks are spoken for by those.
  if (idle_ >= static_cast<int>(tasks_.size())) {
    lock.unlock();
    cv_.notify_one();
    return;
  }
  threads_.emplace_back([this] { work(); });
}

int SenderPool::num_threads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(threads_.size());
}

void SenderPool::work() {
  OpenAiClient client(base_url_, api_key_, timeout_s_);
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (tasks_.empty()) {
      if (stop_) return;
      ++idle_;
      cv_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
      --idle_;
      continue;
    }
    Task task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    task(client);
    lock.lock();
  }
}

}  // namespace llms::benchserve
