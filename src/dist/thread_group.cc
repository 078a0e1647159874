#include "dist/thread_group.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>

namespace llms {
namespace {

template <typename T>
std::vector<uint8_t> bytes_of(std::span<const T> v) {
  const auto* p = reinterpret_cast<const uint8_t*>(v.data());
  return std::vector<uint8_t>(p, p + v.size_bytes());
}

class Member final : public Communicator {
 public:
  Member(ThreadGroup& group, int rank) : group_(group), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_.size(); }

  Status broadcast(std::vector<uint8_t>& bytes, bool /*idle*/) override {
    std::vector<std::vector<uint8_t>> all;
    LLMS_RETURN_IF_ERROR(group_.exchange(rank_, rank_ == 0 ? bytes : std::vector<uint8_t>(), all));
    bytes = std::move(all[0]);
    return ok_status();
  }

  Status allreduce_sum(float* data, int64_t n) override {
    std::vector<std::vector<uint8_t>> all;
    LLMS_RETURN_IF_ERROR(group_.exchange(rank_, bytes_of(std::span<const float>(data, static_cast<size_t>(n))), all));
    std::vector<float> part(static_cast<size_t>(n));
    for (size_t r = 0; r < all.size(); ++r) {
      std::memcpy(part.data(), all[r].data(), all[r].size());
      if (r == 0) std::copy(part.begin(), part.end(), data);
      for (int64_t i = 0; r > 0 && i < n; ++i) data[i] += part[static_cast<size_t>(i)];
    }
    return ok_status();
  }

  Status gather(std::span<const float> mine, std::span<const int64_t> /*counts*/, float* all) override {
    std::vector<std::vector<uint8_t>> parts;
    LLMS_RETURN_IF_ERROR(group_.exchange(rank_, bytes_of(mine), parts));
    if (rank_ != 0) return ok_status();
    auto* out = reinterpret_cast<uint8_t*>(all);
    for (const auto& p : parts) out = std::copy(p.begin(), p.end(), out);
    return ok_status();
  }

  Status allgather(std::span<const uint8_t> mine, std::vector<uint8_t>& all) override {
    std::vector<std::vector<uint8_t>> parts;
    LLMS_RETURN_IF_ERROR(group_.exchange(rank_, std::vector<uint8_t>(mine.begin(), mine.end()), parts));
    all.clear();
    for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end());
    return ok_status();
  }

  Status send(int dest, std::span<const float> data) override {
    if (dest < 0 || dest >= size() || dest == rank_) return invalid_argument(fmt::format("no rank {} to send to", dest));
    group_.post(rank_, dest, std::vector<float>(data.begin(), data.end()));
    return ok_status();
  }

  Status recv(int source, std::span<float> data) override {
    if (source < 0 || source >= size() || source == rank_) {
      return invalid_argument(fmt::format("no rank {} to receive from", source));
    }
    return group_.take(source, rank_, data);
  }

  Status flush_sends() override { return group_.wait_taken(rank_); }

  Result<std::unique_ptr<Communicator>> split(int color, int key) override {
    const int32_t mine[2] = {color, key};
    std::vector<std::vector<uint8_t>> all;
    LLMS_RETURN_IF_ERROR(group_.exchange(rank_, bytes_of(std::span<const int32_t>(mine, 2)), all));
    std::vector<std::pair<int32_t, int>> same;  // (key, rank) of the members of this color
    for (int r = 0; r < static_cast<int>(all.size()); ++r) {
      int32_t theirs[2];
      std::memcpy(theirs, all[static_cast<size_t>(r)].data(), sizeof theirs);
      if (theirs[0] == color) same.emplace_back(theirs[1], r);
    }
    std::sort(same.begin(), same.end());
    const auto me = std::find(same.begin(), same.end(), std::make_pair(static_cast<int32_t>(key), rank_));
    ThreadGroup& sub = group_.subgroup(rounds_++, color, static_cast<int>(same.size()));
    return std::unique_ptr<Communicator>(new Member(sub, static_cast<int>(me - same.begin())));
  }

 private:
  ThreadGroup& group_;
  const int rank_;
  int rounds_ = 0;  // the splits this member has made (every member makes the same ones)
};

}  // namespace

ThreadGroup::ThreadGroup(int size, double timeout_s) : size_(size), timeout_s_(timeout_s) {
  slots_.resize(static_cast<size_t>(size));
  mail_.resize(static_cast<size_t>(size * size));
  for (int r = 0; r < size; ++r) members_.push_back(std::make_unique<Member>(*this, r));
}

ThreadGroup::~ThreadGroup() = default;

Status ThreadGroup::exchange(int rank, std::vector<uint8_t> mine, std::vector<std::vector<uint8_t>>& all) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s_);
  auto timed_out = [&] {
    return Status(StatusCode::kDeadlineExceeded,
                  fmt::format("rank {}: the group did not meet within {} s", rank, timeout_s_));
  };
  // The last round is still being read: wait for it to empty.
  if (!cv_.wait_until(lock, deadline, [&] { return !full_; })) return timed_out();
  slots_[static_cast<size_t>(rank)] = std::move(mine);
  if (++arrived_ == size_) {
    full_ = true;
    cv_.notify_all();
  } else if (!cv_.wait_until(lock, deadline, [&] { return full_; })) {
    return timed_out();
  }
  all = slots_;
  if (++departed_ == size_) {
    arrived_ = departed_ = 0;
    full_ = false;
    cv_.notify_all();
  }
  return ok_status();
}

}  // namespace llms

namespace llms {

void ThreadGroup::post(int from, int to, std::vector<float> message) {
  std::lock_guard<std::mutex> lock(mu_);
  mail_[static_cast<size_t>(from * size_ + to)].push_back(std::move(message));
  cv_.notify_all();
}

Status ThreadGroup::wait_taken(int from) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s_);
  for (int to = 0; to < size_; ++to) {
    auto& box = mail_[static_cast<size_t>(from * size_ + to)];
    if (!cv_.wait_until(lock, deadline, [&] { return box.empty(); })) {
      return Status(StatusCode::kDeadlineExceeded,
                    fmt::format("rank {}: rank {} did not take its messages within {} s", from, to, timeout_s_));
    }
  }
  return ok_status();
}

ThreadGroup& ThreadGroup::subgroup(int round, int color, int size) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& g = subgroups_[{round, color}];
  if (!g) g = std::make_unique<ThreadGroup>(size, timeout_s_);
  return *g;
}

Status ThreadGroup::take(int from, int to, std::span<float> out) {
  std::unique_lock<std::mutex> lock(mu_);
  auto& box = mail_[static_cast<size_t>(from * size_ + to)];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s_);
  if (!cv_.wait_until(lock, deadline, [&] { return !box.empty(); })) {
    return Status(StatusCode::kDeadlineExceeded,
                  fmt::format("rank {}: no message from rank {} within {} s", to, from, timeout_s_));
  }
  std::vector<float> m = std::move(box.front());
  box.pop_front();
  cv_.notify_all();  // wait_taken() may be waiting for this box to empty
  if (m.size() != out.size()) {
    return invalid_argument(fmt::format("rank {}: a message of {} floats from rank {}, {} expected", to, m.size(), from,
                                        out.size()));
  }
  std::copy(m.begin(), m.end(), out.begin());
  return ok_status();
}

}  // namespace llms
