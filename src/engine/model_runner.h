// ModelRunner: what the engine needs from a model — run a batch of chunks — behind an
// interface so that scheduler tests can use a fake model.
// LocalModelRunner runs a Model on this machine's cores with its own KV cache; under
// tensor parallelism (the model split over ranks, Model::ranks()) it runs on rank 0 and
// leads the group: before each pass it broadcasts the pass's plan (engine/step_plan.h)
// to the other ranks, which run it in run_tensor_parallel_worker().
//
// Thread-safety: called only from the engine thread.
#pragma once

#include <chrono>

#include <functional>
#include <memory>
#include <span>

#include "base/status.h"
#include "base/step_profile.h"
#include "base/thread_pool.h"
#include "kv/kv_cache.h"
#include "model/batch.h"
#include "model/early_exit.h"
#include "model/model.h"

namespace llms {

class ModelRunner {
 public:
  virtual ~ModelRunner() = default;
  virtual int vocab_size() const = 0;
  virtual Status forward(std::span<const SequenceChunk> chunks, ForwardOutput& out) = 0;
  // Not OK once the runner can never run a pass again (its tensor-parallel group
  // failed): the engine then fails every request as unavailable.
  virtual Status health() const { return ok_status(); }
  // Called by an idle engine: rank 0 of a group checks, at most every
  // kHeartbeatInterval, that every rank still answers (health() then says if not).
  virtual void heartbeat() {}
  // What the model's weights take in memory (a fake model takes none).
  virtual WeightsMemory weights_memory() const { return {}; }
  // Bytes of KV cache memory reserved (address space) and committed (touched) so far.
  virtual int64_t kv_reserved_bytes() const { return 0; }
  // Gives the memory of KV blocks no sequence holds back to the operating system
  // (memory pressure); returns the bytes given back. A runner without a cache: 0.
  virtual int64_t discard_kv_blocks(std::span<const int32_t> /*blocks*/) { return 0; }
  // Times the parts of later passes into `profile` (null: stop); a fake model times nothing.
  virtual void set_profile(StepProfile* /*profile*/) {}
  // Of a mixture of experts: its expert count and the tokens routed so far
  // (ForwardState::expert_load()); 0 and empty for a dense model.
  virtual int expert_count() const { return 0; }
  virtual std::span<const int64_t> expert_load() const { return {}; }
  // Sets the routed-token counts of expert_load() back to 0 (after a warm-up pass).
  virtual void reset_expert_load() {}
  // Confidence early exit for the chunks that allow it (SequenceChunk::early_exit_from);
  // INVALID_ARGUMENT for settings the model cannot have. A fake model never exits.
  virtual Status set_early_exit(const EarlyExitConfig& /*exit*/) { return ok_status(); }
  // Calls fn(i) for every i in [0, n), spread over the runner's threads when it has
  // them (the calls must not share state); returns when all are done.
  virtual void for_each(int64_t n, const std::function<void(int64_t)>& fn) {
    for (int64_t i = 0; i < n; ++i) fn(i);
  }
};

class LocalModelRunner : public ModelRunner {
 public:
  // context_length: the longest sequence the engine admits (ForwardState::set_context_length).
  LocalModelRunner(const Model& model, const KvCacheConfig& kv_config, int threads, int context_length = 0);
  // Rank 0 of a group: tells the other ranks to stop (unless the group failed).
  ~LocalModelRunner() override;

  // Rank 0 of a group: sends the other ranks this runner's KV pool and context, which
  // they build their own pools from; for one process, nothing.
  Status start_group();
  // Runs the chunks here only, without telling the group (what a worker does with
  // each plan it receives).
  Status forward_here(std::span<const SequenceChunk> chunks, ForwardOutput& out);

  int vocab_size() const override { return model_.config().n_vocab; }
  Status health() const override { return group_failed_; }
  void heartbeat() override;
  // The pool parks after the pass: its workers sleep while the engine samples,
  // schedules and streams, rather than spinning on the cores the HTTP threads need.
  Status forward(std::span<const SequenceChunk> chunks, ForwardOutput& out) override;
  WeightsMemory weights_memory() const override { return model_.weights_memory(); }
  int64_t kv_reserved_bytes() const override { return kv_.total_bytes(); }
  int64_t discard_kv_blocks(std::span<const int32_t> blocks) override;
  void set_profile(StepProfile* profile) override {
    state_.set_profile(profile);
    pool_.set_wait_counter(profile ? profile->wait_counter() : nullptr);
  }
  int expert_count() const override { return model_.config().n_expert; }
  std::span<const int64_t> expert_load() const override { return state_.expert_load(); }
  void reset_expert_load() override { state_.reset_expert_load(); }
  Status set_early_exit(const EarlyExitConfig& exit) override;
  const KvCache& kv_cache() const { return kv_; }
  int num_threads() const { return pool_.num_threads(); }
  void for_each(int64_t n, const std::function<void(int64_t)>& fn) override;

 private:
  // Rank 0's `plan` to the other ranks of the group (nothing for one process); the
  // first failure is kept and returned from then on.
  Status tell_group(std::vector<uint8_t> plan);
  bool leads_group() const { return model_.ranks().size() > 1 && model_.ranks().rank() == 0; }

  const Model& model_;
  const int context_length_;
  Status group_failed_;
  std::chrono::steady_clock::time_point last_told_;  // the group last heard from rank 0
  KvCache kv_;
  ForwardState state_;
  ThreadPool pool_;
  EarlyExitConfig exit_;
};

}  // namespace llms
