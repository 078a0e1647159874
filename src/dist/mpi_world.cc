#include "dist/mpi_world.h"

#include <mpi.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <deque>
#include <mutex>
#include <thread>

namespace llms {
namespace {

std::string mpi_error(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) return fmt::format("MPI error {}", rc);
  return std::string(text, static_cast<size_t>(len));
}

// The failure of a world and of every group split from it (one verdict for all).
struct GroupHealth {
  std::mutex mu;
  Status failed;
};

class MpiWorld final : public Communicator {
 public:
  // `world`: the communicator MPI_Init gave this process, finalised with it; a group
  // split from it frees its communicator only, and shares its health.
  MpiWorld(MPI_Comm comm, const MpiOptions& o, std::shared_ptr<GroupHealth> health, bool world)
      : comm_(comm), options_(o), health_(std::move(health)), world_(world) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiWorld() override {
    // A failed group cannot finalise (it would wait for the dead rank).
    if (health().ok() && flush_sends().ok()) {
      MPI_Comm_free(&comm_);
      if (world_) MPI_Finalize();
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status health() const override {
    std::lock_guard<std::mutex> lock(health_->mu);
    return health_->failed;
  }

  Status broadcast(std::vector<uint8_t>& bytes, bool idle) override {
    uint64_t len = bytes.size();
    LLMS_RETURN_IF_ERROR(run("broadcast", idle, [&](MPI_Request* r) {
      return MPI_Ibcast(&len, 1, MPI_UINT64_T, 0, comm_, r);
    }));
    bytes.resize(len);
    if (len == 0) return ok_status();
    return run("broadcast", false, [&](MPI_Request* r) {
      return MPI_Ibcast(bytes.data(), static_cast<int>(len), MPI_BYTE, 0, comm_, r);
    });
  }

  Status allreduce_sum(float* data, int64_t n) override {
    parts_.resize(static_cast<size_t>(n * size_));
    LLMS_RETURN_IF_ERROR(run("allreduce", false, [&](MPI_Request* r) {
      return MPI_Iallgather(data, static_cast<int>(n), MPI_FLOAT, parts_.data(), static_cast<int>(n), MPI_FLOAT, comm_, r);
    }));
    // Rank order on every rank: the same bits everywhere.
    std::copy(parts_.begin(), parts_.begin() + n, data);
    for (int r = 1; r < size_; ++r) {
      const float* p = parts_.data() + static_cast<size_t>(r) * static_cast<size_t>(n);
      for (int64_t i = 0; i < n; ++i) data[i] += p[i];
    }
    return ok_status();
  }

  Status gather(std::span<const float> mine, std::span<const int64_t> counts, float* all) override {
    std::vector<int> c(counts.begin(), counts.end()), displs(counts.size());
    for (size_t r = 1; r < c.size(); ++r) displs[r] = displs[r - 1] + c[r - 1];
    return run("gather", false, [&](MPI_Request* r) {
      return MPI_Igatherv(mine.data(), static_cast<int>(mine.size()), MPI_FLOAT, all, c.data(), displs.data(), MPI_FLOAT,
                          0, comm_, r);
    });
  }

  Status allgather(std::span<const uint8_t> mine, std::vector<uint8_t>& all) override {
    all.resize(mine.size() * static_cast<size_t>(size_));
    return run("allgather", false, [&](MPI_Request* r) {
      return MPI_Iallgather(mine.data(), static_cast<int>(mine.size()), MPI_BYTE, all.data(),
                            static_cast<int>(mine.size()), MPI_BYTE, comm_, r);
    });
  }

  Status send(int dest, std::span<const float> data) override {
    if (Status s = health(); !s.ok()) return s;
    reap_sends();
    // The copy travels while the caller computes; flush_sends() waits for it.
    sends_.push_back({std::vector<float>(data.begin(), data.end()), MPI_REQUEST_NULL});
    Pending& p = sends_.back();
    const int rc = MPI_Isend(p.data.data(), static_cast<int>(p.data.size()), MPI_FLOAT, dest, kTag, comm_, &p.req);
    if (rc != MPI_SUCCESS) return fail(unavailable(fmt::format("MPI send to rank {} failed: {}", dest, mpi_error(rc))));
    return ok_status();
  }

  Status recv(int source, std::span<float> data) override {
    MPI_Status status;
    LLMS_RETURN_IF_ERROR(run("receive", false, [&](MPI_Request* r) {
      return MPI_Irecv(data.data(), static_cast<int>(data.size()), MPI_FLOAT, source, kTag, comm_, r);
    }, &status));
    int count = 0;
    MPI_Get_count(&status, MPI_FLOAT, &count);
    if (static_cast<size_t>(count) != data.size()) {
      return fail(internal_error(fmt::format("a message of {} floats from rank {}, {} expected", count, source, data.size())));
    }
    return ok_status();
  }

  Result<std::unique_ptr<Communicator>> split(int color, int key) override {
    // MPI_Comm_split has no deadline: every rank first meets in one that has, so that
    // none enters it while another is dead or elsewhere.
    std::vector<uint8_t> all;
    const uint8_t here = 1;
    LLMS_RETURN_IF_ERROR(allgather({&here, 1}, all));
    MPI_Comm sub;
    const int rc = MPI_Comm_split(comm_, color, key, &sub);
    if (rc != MPI_SUCCESS) return fail(unavailable(fmt::format("MPI_Comm_split failed: {}", mpi_error(rc))));
    MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN);
    return std::unique_ptr<Communicator>(new MpiWorld(sub, options_, health_, /*world=*/false));
  }

  Status flush_sends() override {
    while (!sends_.empty()) {
      LLMS_RETURN_IF_ERROR(run("send", false, [&](MPI_Request* r) {
        *r = sends_.front().req;
        return MPI_SUCCESS;
      }));
      sends_.pop_front();
    }
    return ok_status();
  }

 private:
  static constexpr int kTag = 7;  // every point-to-point message (one stream per pair of ranks)
  struct Pending {
    std::vector<float> data;
    MPI_Request req;
  };

  // Drops the sends already delivered (their buffers are free again).
  void reap_sends() {
    while (!sends_.empty()) {
      int done = 0;
      if (MPI_Test(&sends_.front().req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || !done) return;
      sends_.pop_front();
    }
  }

  // Starts a collective with `start` and polls it to completion: within the step
  // deadline, or (idle) without one, sleeping between polls.
  template <typename Start>
  Status run(const char* what, bool idle, Start&& start, MPI_Status* status = MPI_STATUS_IGNORE) {
    if (Status s = health(); !s.ok()) return s;
    MPI_Request req = MPI_REQUEST_NULL;
    int rc = start(&req);
    if (rc != MPI_SUCCESS) return fail(unavailable(fmt::format("MPI {} failed: {}", what, mpi_error(rc))));
    const auto begin = std::chrono::steady_clock::now();
    const auto deadline = begin + std::chrono::duration<double>(options_.step_timeout_s);
    for (int polls = 0;; ++polls) {
      int done = 0;
      rc = MPI_Test(&req, &done, status);
      if (rc != MPI_SUCCESS) return fail(unavailable(fmt::format("MPI {} failed: {}", what, mpi_error(rc))));
      if (done) return ok_status();
      if (polls < 2000) continue;  // a step's collective usually completes within these
      const auto now = std::chrono::steady_clock::now();
      if (!idle && now > deadline) {
        return fail(Status(StatusCode::kDeadlineExceeded,
                           fmt::format("MPI {}: a rank did not answer within {} s (step_timeout)", what,
                                       options_.step_timeout_s)));
      }
      // Past the first polls, yield the core: the other ranks may share it.
      std::this_thread::sleep_for(std::chrono::microseconds(idle ? 200 : 20));
    }
  }

  Status fail(Status s) {
    std::lock_guard<std::mutex> lock(health_->mu);
    if (health_->failed.ok()) health_->failed = s;  // the first failure is the cause
    return s;
  }

  MPI_Comm comm_;
  MpiOptions options_;
  int rank_ = 0, size_ = 1;
  std::vector<float> parts_;  // [size, n]: every rank's part of an allreduce
  std::deque<Pending> sends_;  // sent, not yet known to be delivered, in order
  std::shared_ptr<GroupHealth> health_;  // asked from other threads; shared with the groups split from this one
  const bool world_;
};

}  // namespace

bool mpi_available() { return true; }

void abort_mpi_world(int exit_code) {
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);  // MPI_Abort does not return; should it, end this process alike
}

Result<std::unique_ptr<Communicator>> open_mpi_world(const MpiOptions& options) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return failed_precondition("MPI is already initialised in this process");
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
    return unavailable("MPI_Init_thread failed");
  }
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    return unimplemented("this MPI library does not support MPI_THREAD_SERIALIZED");
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm comm;
  if (MPI_Comm_dup(MPI_COMM_WORLD, &comm) != MPI_SUCCESS) return unavailable("MPI_Comm_dup failed");
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  return std::unique_ptr<Communicator>(new MpiWorld(comm, options, std::make_shared<GroupHealth>(), /*world=*/true));
}

}  // namespace llms
