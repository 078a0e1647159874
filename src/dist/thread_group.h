// ThreadGroup: the ranks of a tensor-parallel group as threads of one process, each
// with a Communicator of its own (member(r)). The collectives meet on a shared slot
// table under a mutex, so results are the same as MPI's (allreduce in rank order);
// point-to-point messages wait in a queue per (sender, receiver) pair; a member's
// split() makes a subgroup of the group's (owned by it); tests use it to run a split
// model on every build, with or without MPI.
//
// Thread-safety: each member is used by one thread (its rank's), as Communicator
// requires; the group is shared by all of them and must outlive them.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include "dist/communicator.h"

namespace llms {

class ThreadGroup {
 public:
  // `timeout_s`: the longest a member waits for the others in a collective.
  explicit ThreadGroup(int size, double timeout_s = 30);
  ~ThreadGroup();
  Communicator& member(int rank) { return *members_[static_cast<size_t>(rank)]; }
  int size() const { return size_; }

  // Every member's `mine`, in rank order; DEADLINE_EXCEEDED when some member does
  // not arrive within the timeout (used by the members' collectives).
  Status exchange(int rank, std::vector<uint8_t> mine, std::vector<std::vector<uint8_t>>& all);
  // Queues `from`'s message to `to` (never waits); take() gives them in order, waiting
  // up to the timeout (DEADLINE_EXCEEDED), INVALID_ARGUMENT for a length that differs.
  void post(int from, int to, std::vector<float> message);
  Status take(int from, int to, std::span<float> out);
  // Waits until every message `from` posted has been taken (as MPI's flush_sends()
  // does: a message no rank receives is an error, not a leak); DEADLINE_EXCEEDED
  // naming the rank that did not take one.
  Status wait_taken(int from);
  // The subgroup of `size` members that the members' `round`-th split gave `color`
  // (made by the first member to ask; it lives as long as this group).
  ThreadGroup& subgroup(int round, int color, int size);

 private:
  const int size_;
  const double timeout_s_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::vector<uint8_t>> slots_;
  int arrived_ = 0, departed_ = 0;
  bool full_ = false;  // every member arrived; the round is read until all depart
  std::vector<std::deque<std::vector<float>>> mail_;  // [from * size + to]
  std::vector<std::unique_ptr<Communicator>> members_;
  std::map<std::pair<int, int>, std::unique_ptr<ThreadGroup>> subgroups_;  // by (round, color)
};

}  // namespace llms
