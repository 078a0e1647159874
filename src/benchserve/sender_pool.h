// Threads that send requests, each with its own client (a connection per request). A
// task handed over when every thread is busy starts a new thread, so that the arrival
// process, not the pool, decides when a request is sent (open loop); threads stay for
// the next task.
//
// Thread-safety: submit() from one thread (the dispatcher); tasks run on the pool's
// threads; the destructor waits for every task.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "benchserve/openai_client.h"

namespace llms::benchserve {

class SenderPool {
 public:
  using Task = std::function<void(OpenAiClient&)>;

  SenderPool(std::string base_url, std::string api_key, double timeout_s);
  ~SenderPool();
  SenderPool(const SenderPool&) = delete;
  SenderPool& operator=(const SenderPool&) = delete;

  void submit(Task task);
  int num_threads() const;

 private:
  void work();

  const std::string base_url_, api_key_;
  const double timeout_s_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> tasks_;
  int idle_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace llms::benchserve
