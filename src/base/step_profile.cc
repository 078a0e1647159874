#include "base/step_profile.h"

#include <fmt/format.h>

namespace llms {

const char* step_part_name(StepPart p) {
  switch (p) {
    case StepPart::kMatmul: return "matmul";
    case StepPart::kLora: return "lora";
    case StepPart::kAttention: return "attention";
    case StepPart::kElementwise: return "elementwise";
    case StepPart::kLogits: return "logits";
    case StepPart::kSampling: return "sampling";
    case StepPart::kDetokenize: return "detok+stop";
    case StepPart::kSchedule: return "schedule";
    case StepPart::kCount: break;
  }
  return "?";
}

int step_bucket(int64_t tokens) {
  if (tokens <= 1) return 0;
  if (tokens <= 8) return 1;
  if (tokens <= 32) return 2;
  if (tokens <= 128) return 3;
  if (tokens <= 512) return 4;
  return 5;
}

const char* step_bucket_name(int bucket) {
  static const char* const kNames[kNumStepBuckets] = {"1", "2-8", "9-32", "33-128", "129-512", "513+"};
  return bucket >= 0 && bucket < kNumStepBuckets ? kNames[bucket] : "?";
}

void StepProfile::end_step(int64_t tokens, int64_t total_ns) {
  StepBucketProfile& b = buckets_[static_cast<size_t>(step_bucket(tokens))];
  b.steps += 1;
  b.tokens += tokens;
  b.total_ns += total_ns;
  b.pool_wait_ns += current_wait_;
  for (int i = 0; i < kNumStepParts; ++i) b.part_ns[static_cast<size_t>(i)] += current_[static_cast<size_t>(i)];
  discard_step();
}

void StepProfile::discard_step() {
  current_.fill(0);
  current_wait_ = 0;
}

std::string StepProfile::table() const {
  std::string out = fmt::format("{:>8} {:>7} {:>9} {:>8}", "tokens", "steps", "ms/step", "tok/s");
  for (int i = 0; i < kNumStepParts; ++i) out += fmt::format(" {:>11}", step_part_name(static_cast<StepPart>(i)));
  out += fmt::format(" {:>11} {:>8}\n", "(pool wait)", "other");
  for (int k = 0; k < kNumStepBuckets; ++k) {
    const StepBucketProfile& b = buckets_[static_cast<size_t>(k)];
    if (b.steps == 0) continue;
    const double total = static_cast<double>(b.total_ns);
    int64_t covered = 0;
    out += fmt::format("{:>8} {:>7} {:>9.3f} {:>8.0f}", step_bucket_name(k), b.steps, total * 1e-6 / b.steps,
                       total > 0 ? static_cast<double>(b.tokens) / (total * 1e-9) : 0.0);
    for (int i = 0; i < kNumStepParts; ++i) {
      covered += b.part_ns[static_cast<size_t>(i)];
      out += fmt::format(" {:>10.1f}%", total > 0 ? 100.0 * static_cast<double>(b.part_ns[static_cast<size_t>(i)]) / total : 0.0);
    }
    // The pool's wait lies inside the parts (matmul and attention mostly), so it is
    // shown apart and not subtracted.
    out += fmt::format(" {:>10.1f}% {:>7.1f}%\n", total > 0 ? 100.0 * static_cast<double>(b.pool_wait_ns) / total : 0.0,
                       total > 0 ? 100.0 * static_cast<double>(b.total_ns - covered) / total : 0.0);
  }
  return out;
}

}  // namespace llms
