// StepProfile: where an engine step's time goes, by part (matrix products, LoRA
// adapters' products, attention, element-wise ops, the output head, sampling,
// detokenization and stop matching, scheduling, waiting for the pool's workers) and by
// step size (tokens in the step).
//
// Off unless the engine is configured to profile: the model and the engine then time
// each part with two clock reads (about 40 ns), next to parts that take microseconds.
// The pool's wait is the time the calling thread spends, after its own share of a job,
// until the workers have finished theirs (ThreadPool::set_wait_counter).
//
// Thread-safety: written by the engine thread only; read between steps (the engine
// copies it out under its status lock).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "base/clock.h"

namespace llms {

enum class StepPart {
  kMatmul,       // the layers' matrix products (activation quantization included)
  kLora,         // the LoRA adapters' low-rank products beside them (absent without adapters)
  kAttention,    // paged attention
  kElementwise,  // embeddings, norms, RoPE, KV stores, activations, residual adds
  kLogits,       // the final norm and the output head's product
  kSampling,     // logits processing (grammar masks), sampling, logprobs
  kDetokenize,   // detokenization, stop matching, handing events to the client
  kSchedule,     // intake, reaping, scheduling, KV commits, metrics
  kCount,
};
inline constexpr int kNumStepParts = static_cast<int>(StepPart::kCount);
const char* step_part_name(StepPart p);

// Step sizes (tokens in a step) are grouped in buckets: 1, 2-8, 9-32, 33-128, 129-512,
// 513 and more.
inline constexpr int kNumStepBuckets = 6;
int step_bucket(int64_t tokens);
const char* step_bucket_name(int bucket);

struct StepBucketProfile {
  int64_t steps = 0;
  int64_t tokens = 0;
  int64_t total_ns = 0;  // whole steps
  int64_t pool_wait_ns = 0;
  std::array<int64_t, kNumStepParts> part_ns{};
};

class StepProfile {
 public:
  StepProfile() = default;
  explicit StepProfile(bool enabled) : enabled_(enabled) {}
  bool enabled() const { return enabled_; }
  void set_enabled(bool on) { enabled_ = on; }

  // Adds to the part of the step in progress.
  void add(StepPart part, int64_t ns) { current_[static_cast<int>(part)] += ns; }
  // The counter ThreadPool adds its caller's wait to.
  int64_t* wait_counter() { return &current_wait_; }
  // The step in progress so far, by part, and the pool's wait in it.
  const std::array<int64_t, kNumStepParts>& current() const { return current_; }
  int64_t current_wait() const { return current_wait_; }
  // Closes the step in progress: `tokens` in it, `total_ns` long.
  void end_step(int64_t tokens, int64_t total_ns);
  // Forgets the step in progress (a step that ran nothing).
  void discard_step();
  // Forgets every step (stays enabled or not).
  void clear() { *this = StepProfile{enabled_}; }

  const std::array<StepBucketProfile, kNumStepBuckets>& buckets() const { return buckets_; }
  // A table, one line per step size seen: steps, mean ms per step, then the share of
  // each part, the pool's wait and what no part covers.
  std::string table() const;

 private:
  bool enabled_ = false;
  std::array<int64_t, kNumStepParts> current_{};
  int64_t current_wait_ = 0;
  std::array<StepBucketProfile, kNumStepBuckets> buckets_{};
};

// Times a scope into `profile`'s `part` when profiling (profile may be null).
class ScopedStepPart {
 public:
  ScopedStepPart(StepProfile* profile, StepPart part)
      : profile_(profile != nullptr && profile->enabled() ? profile : nullptr), part_(part),
        start_(profile_ ? now_ns() : 0) {}
  ~ScopedStepPart() {
    if (profile_) profile_->add(part_, now_ns() - start_);
  }
  ScopedStepPart(const ScopedStepPart&) = delete;
  ScopedStepPart& operator=(const ScopedStepPart&) = delete;

 private:
  StepProfile* profile_;
  StepPart part_;
  int64_t start_;
};

}  // namespace llms
