#include "deploy/quality_monitor.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "base/clock.h"
#include "base/log.h"
#include "deploy/cross_score.h"

namespace llms {
namespace {

constexpr int64_t kPollNs = 10'000'000;
constexpr size_t kTakeAtOnce = 8;

EvalSide side_of(const ServingVersion& v) { return {&v.model(), v.k_type(), v.v_type()}; }

}  // namespace

QualityMonitor::QualityMonitor(VersionSet& versions, CrossScoringConfig config, std::function<void()> on_scored)
    : versions_(versions), config_(config), on_scored_(std::move(on_scored)) {
  if (config_.share > 0) thread_ = std::thread([this] { thread_main(); });
}

QualityMonitor::~QualityMonitor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

PairQuality QualityMonitor::pair() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pair_;
}

void QualityMonitor::thread_main() {
  // The lowest CPU priority for this thread alone (Linux: nice is per thread): served
  // requests' threads always go first.
  if (setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), config_.nice) != 0) {
    log_warn("quality monitor: could not lower its priority");
  }
  last_ns_ = now_ns();
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::nanoseconds(kPollNs), [&] { return stop_; });
      if (stop_) return;
    }
    const VersionPtr stable = versions_.current(), cand = versions_.candidate();
    const std::string s_name = stable ? stable->name() : "", c_name = cand ? cand->name() : "";
    bool changed = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (pair_.stable != s_name || pair_.candidate != c_name) {
        pair_ = PairQuality{s_name, c_name, {}, {}};
        changed = true;
      }
    }
    if (changed) {  // a new comparison: both sides start from their next requests
      for (const VersionPtr& v : {stable, cand}) {
        if (v && v->sampler()) v->sampler()->reset();
      }
      std::fill(std::begin(kl_sum_), std::end(kl_sum_), 0.0);
      std::fill(std::begin(nll_sum_), std::end(nll_sum_), 0.0);
      std::fill(std::begin(tokens_), std::end(tokens_), int64_t{0});
    }
    const int64_t now = now_ns();
    allowance_ = std::min(config_.tokens_per_s,  // at most a second's budget saved up
                          allowance_ + config_.tokens_per_s * static_cast<double>(now - last_ns_) * 1e-9);
    last_ns_ = now;
    if (!stable || !cand) {
      if (stable && stable->sampler()) stable->sampler()->take(SIZE_MAX);  // nothing to compare with
      continue;
    }
    if (score_some(stable, cand) && on_scored_) on_scored_();
  }
}

bool QualityMonitor::score_some(const VersionPtr& stable, const VersionPtr& cand) {
  bool any = false;
  for (bool progress = true; progress;) {
    progress = false;
    for (int side = 0; side < 2; ++side) {  // alternately: neither side's queue starves the other
      ServingVersion& writer = side == 0 ? *cand : *stable;
      ServingVersion& other = side == 0 ? *stable : *cand;
      if (!writer.sampler() || allowance_ <= 0) continue;
      for (const TrafficSample& s : writer.sampler()->take(1)) {
        // Both models run the text: that is what the budget pays for.
        allowance_ -= 2.0 * static_cast<double>(s.tokens.size());
        progress = score_one(writer, other, side == 0, s) || progress;
      }
    }
    any = any || progress;
  }
  return any;
}

bool QualityMonitor::score_one(ServingVersion& writer, ServingVersion& other, bool writer_is_candidate,
                               const TrafficSample& s) {
  auto r = cross_score(s.tokens, s.prompt_len, side_of(writer), side_of(other), pool_);
  if (!r.ok()) {
    log_warn("quality monitor: scoring a sample of {}: {}", writer.name(), r.status().to_string());
    return false;
  }
  const int i = writer_is_candidate ? 0 : 1;
  const auto n = static_cast<double>(r->tokens);
  kl_sum_[i] += r->kl * n;
  nll_sum_[i] += r->nll_other * n;
  tokens_[i] += r->tokens;
  const double nll_under_stable = writer_is_candidate ? r->nll_other : r->nll_self;
  VersionQualityMetrics& m = writer.quality();
  m.cross_perplexity.set(std::exp(nll_sum_[i] / static_cast<double>(tokens_[i])));
  m.cross_kl.set(kl_sum_[i] / static_cast<double>(tokens_[i]));
  m.scored_tokens.inc(n);
  m.scored_outputs.inc();
  if (writer_is_candidate && config_.max_cross_perplexity > 0 && std::exp(r->nll_other) > config_.max_cross_perplexity) {
    writer.engine().count_abnormal_output("cross_perplexity");
  }
  std::lock_guard<std::mutex> lock(mu_);
  MeanStream& stream = writer_is_candidate ? pair_.candidate_nll : pair_.stable_nll;
  stream.add(nll_under_stable);
  m.stable_nll.set(stream.mean);
  return true;
}

}  // namespace llms
