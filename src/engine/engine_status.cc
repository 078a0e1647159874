#include "engine/engine_status.h"

#include "model/lora.h"

#include <algorithm>

#include "base/memory.h"

namespace llms {
namespace {

constexpr int64_t kRssCheckIntervalNs = 100'000'000;

}  // namespace

void EngineStatus::account_kv_slots(const std::vector<Sequence*>& running, const KvBlockManager& kv) {
  const int64_t B = kv.block_size();
  for (const Sequence* s : running) {
    const int64_t capacity = s->blocks.table.capacity(static_cast<int>(B));
    waste_slots_ += static_cast<double>(capacity - s->blocks.table.num_tokens);
    logical_slots_ += static_cast<double>(capacity);
  }
  reserved_slots_ += static_cast<double>(kv.num_used()) * static_cast<double>(B);
}

void EngineStatus::note_finish(int64_t now, FinishReason reason, bool abnormal) {
  if (reason == FinishReason::kStop || reason == FinishReason::kLength) ++completed_;
  if (reason == FinishReason::kError) ++failed_;
  if (abnormal) ++abnormal_;
  // Completion rate (EMA) for the queue-full retry hint.
  if (last_finish_ns_ > 0) {
    const double dt = std::max(1e-6, static_cast<double>(now - last_finish_ns_) * 1e-9);
    completions_per_s_ = 0.9 * completions_per_s_ + 0.1 / dt;
  }
  last_finish_ns_ = now;
}

void EngineStatus::publish(int64_t now, bool force_rss, const KvBlockManager& kv, int running, int waiting) {
  const int32_t total = kv.num_blocks();
  const double kv_usage = static_cast<double>(kv.num_used()) / total;
  if (force_rss || now - last_rss_check_ns_ >= kRssCheckIntervalNs) {
    last_rss_check_ns_ = now;
    metrics_.rss_bytes.set(static_cast<double>(process_rss_bytes()));
  }
  const double rss_usage = metrics_.rss_bytes.value() / static_cast<double>(memory_limit_bytes_);
  admission_.update_usage(kv_usage, rss_usage);
  const AdmissionState adm = admission_.state();
  admission_.set_retry_hint(static_cast<double>(adm.waiting_requests) / std::max(0.1, completions_per_s_));
  metrics_.running.set(running);
  metrics_.waiting.set(waiting);
  metrics_.kv_blocks.with({"used"}).set(kv.num_used());
  metrics_.kv_blocks.with({"cached"}).set(kv.num_cached_idle());
  metrics_.kv_blocks.with({"free"}).set(kv.num_available() - kv.num_cached_idle());
  metrics_.kv_usage.set(kv_usage);
  metrics_.prefix_evictions.inc(static_cast<double>(kv.stats().evictions) - metrics_.prefix_evictions.value());
  metrics_.watermark.set(adm.overloaded ? 1 : 0);

  std::lock_guard<std::mutex> lock(mu_);
  snapshot_.running = running;
  snapshot_.waiting = waiting;
  snapshot_.kv_blocks_total = total;
  snapshot_.kv_blocks_used = kv.num_used();
  snapshot_.kv_blocks_cached = kv.num_cached_idle();
  snapshot_.prefix = kv.stats();
  snapshot_.admission = adm;
  snapshot_.steps = static_cast<int64_t>(metrics_.steps.value());
  snapshot_.preemptions = static_cast<int64_t>(metrics_.preemptions.value());
  snapshot_.prefill_tokens_computed = static_cast<int64_t>(metrics_.prefill_tokens_computed.value());
  snapshot_.last_step_ns = now;
  snapshot_.kv_waste_pct = reserved_slots_ > 0 ? 100.0 * waste_slots_ / reserved_slots_ : 0.0;
  snapshot_.kv_shared_pct = logical_slots_ > 0 ? 100.0 * (1.0 - reserved_slots_ / logical_slots_) : 0.0;
  snapshot_.completed = completed_;
  snapshot_.failed = failed_;
  snapshot_.abnormal = abnormal_;
  snapshot_.itl_sum_s = metrics_.itl.sum();
  snapshot_.itl_count = static_cast<int64_t>(metrics_.itl.count());
  snapshot_.spec_draft_tokens = static_cast<int64_t>(metrics_.spec_draft_tokens.value());
  snapshot_.spec_accepted_tokens = static_cast<int64_t>(metrics_.spec_accepted_tokens.value());
}

std::vector<std::string> adapter_names(const std::vector<Sequence*>& seqs) {
  std::vector<std::string> out;
  for (const Sequence* s : seqs) {
    if (s->params.adapter) out.push_back(s->params.adapter->name());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void EngineStatus::set_adapters(std::vector<std::string> running, std::vector<std::string> waiting) {
  std::lock_guard<std::mutex> lock(mu_);
  snapshot_.running_adapters = std::move(running);
  snapshot_.waiting_adapters = std::move(waiting);
}

EngineSnapshot EngineStatus::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return snapshot_;
}

}  // namespace llms
