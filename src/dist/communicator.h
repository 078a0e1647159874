// Communicator: the ranks of one tensor- or pipeline-parallel group and the few
// collectives and messages the forward pass and the step plan need, behind an interface so that the model and the
// engine have one code path: a single process uses LocalCommunicator (size 1, every
// collective a no-op or a copy), a group launched by mpirun uses MPI
// (dist/mpi_world.h).
//
// Determinism: allreduce_sum() adds the ranks' parts in rank order (0, 1, ...) on
// every rank, so every rank holds the same bits and no result depends on timing.
// Failures (a rank that died, a collective past its deadline) are returned as
// UNAVAILABLE or DEADLINE_EXCEEDED, never an abort; after one, the group is unusable
// and the caller ends the process.
//
// Thread-safety: one thread at a time calls a communicator (the engine thread on
// rank 0, the worker loop on the others); every rank calls the same collectives in
// the same order.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/status.h"

namespace llms {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Rank 0's `bytes` to every rank (the others' are replaced; any length). With
  // `idle`, a receiving rank waits without a deadline and without spinning (a worker
  // waiting for the next step); otherwise within the step deadline.
  virtual Status broadcast(std::vector<uint8_t>& bytes, bool idle = false) = 0;
  // data[i] = the sum over ranks of their data[i], added in rank order on every rank.
  virtual Status allreduce_sum(float* data, int64_t n) = 0;
  // Rank 0 receives every rank's `mine` one after the other in rank order into `all`
  // (counts[r] floats from rank r; all holds their sum); the others' `all` is unused.
  virtual Status gather(std::span<const float> mine, std::span<const int64_t> counts, float* all) = 0;
  // Every rank's `mine` (the same length on every rank), in rank order, on every rank.
  virtual Status allgather(std::span<const uint8_t> mine, std::vector<uint8_t>& all) = 0;
  // Point-to-point (pipeline parallelism: one stage's hidden states to the next, the
  // last stage's logits to rank 0). send() is buffered: it returns once `data` is
  // copied, before `dest` has it, so the sender computes on while it travels; messages
  // from one rank to another arrive in the order sent.
  virtual Status send(int dest, std::span<const float> data) = 0;
  // The next message from `source` into `data` (exactly its length), within the step
  // deadline.
  virtual Status recv(int source, std::span<float> data) = 0;
  // Waits (within the step deadline) until every message this rank sent has been
  // received, so that a pass leaves nothing in flight.
  virtual Status flush_sends() { return ok_status(); }
  // The failure that ended the group (a rank died or missed a deadline); OK while it
  // works. Any thread may ask.
  virtual Status health() const { return ok_status(); }
  // The ranks that pass the same `color`, as a group of their own, ranked by `key`
  // (ties by rank here): the rows and columns of a 2-D grid (tensor parallelism within
  // a pipeline stage, the stages of one tensor rank). A collective of every rank,
  // within the step deadline. The new group shares this one's failure: once either
  // fails, both report it.
  virtual Result<std::unique_ptr<Communicator>> split(int color, int key) = 0;
};

// One process: rank 0 of 1.
class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Status broadcast(std::vector<uint8_t>& /*bytes*/, bool /*idle*/ = false) override { return ok_status(); }
  Status allreduce_sum(float* /*data*/, int64_t /*n*/) override { return ok_status(); }
  Status gather(std::span<const float> mine, std::span<const int64_t> counts, float* all) override;
  Status allgather(std::span<const uint8_t> mine, std::vector<uint8_t>& all) override;
  // A group of one has no one to send to or receive from: INTERNAL.
  Status send(int dest, std::span<const float> data) override;
  Status recv(int source, std::span<float> data) override;
  // A group of one split is a group of one.
  Result<std::unique_ptr<Communicator>> split(int color, int key) override;

  // The communicator of every single-process model (stateless, so one serves all).
  static LocalCommunicator& instance();
};

}  // namespace llms
