// The deployer's decisions on quality signals: the periodic validation check with its
// drift rule (auto_rollback), and the automatic canary decision (canary_judge.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/clock.h"
#include "base/log.h"
#include "deploy/deployer.h"

namespace llms {
namespace {

EvalSide side_of(const ServingVersion& v) { return {&v.model(), v.k_type(), v.v_type()}; }

}  // namespace

Result<std::vector<int32_t>> Deployer::validation_tokens(ServingVersion& v) {
  if (!config_.quality_text_path.empty()) {
    GateConfig g = config_.gate;
    g.text_path = config_.quality_text_path;
    return gate_tokens(v, g);
  }
  if (gate_tokens_.empty()) {
    LLMS_ASSIGN_OR_RETURN(gate_tokens_, gate_tokens(v, config_.gate));
  }
  return gate_tokens_;
}

void Deployer::record_deploy_quality(ServingVersion& v) {
  if (config_.quality_interval_s <= 0) return;
  auto tokens = validation_tokens(v);
  PerplexityOptions opts;
  opts.ctx = config_.gate.ctx;
  auto r = tokens.ok() ? evaluate_perplexity(*tokens, side_of(v), {}, opts, pool_) : tokens.status();
  if (!r.ok()) {
    log_warn("validation check of {}: {}", v.name(), r.status().to_string());
    return;
  }
  v.set_deploy_perplexity(r->perplexity);
  log_info("validation perplexity of {} at deploy: {:.3f} ({} tokens)", v.name(), r->perplexity, r->scored_tokens);
}

void Deployer::check_quality() {
  last_quality_ns_ = now_ns();
  const VersionPtr stable = versions_.current();
  if (!stable) return;
  auto tokens = validation_tokens(*stable);
  if (!tokens.ok()) {
    log_warn("validation check: {}", tokens.status().to_string());
    return;
  }
  PerplexityOptions opts;
  opts.ctx = config_.gate.ctx;
  // Each version against the stable version's weights with an F32 KV cache: the
  // stable version itself then reads its own KV cache's loss.
  const EvalSide base{&stable->model(), DType::kF32, DType::kF32};
  double stable_ppl = 0;
  std::vector<VersionPtr> order{stable};  // the stable version first: the others' ratios need its perplexity
  for (const VersionPtr& v : versions_.loaded()) {
    if (v != stable) order.push_back(v);
  }
  for (const VersionPtr& v : order) {
    auto r = evaluate_perplexity(*tokens, side_of(*v), base, opts, pool_);
    if (!r.ok()) {
      log_warn("validation check of {}: {}", v->name(), r.status().to_string());
      continue;
    }
    if (v == stable) stable_ppl = r->perplexity;
    VersionQualityMetrics& m = v->quality();
    m.kl.set(r->kl_divergence);
    m.perplexity.set(r->perplexity);
    if (stable_ppl > 0) m.ppl_vs_stable.set(r->perplexity / stable_ppl);
    const double at_deploy = v->deploy_perplexity();
    if (at_deploy <= 0) continue;
    const double drift = r->perplexity / at_deploy;
    m.ppl_drift.set(drift);
    if (v == stable) roll_back_if_drifting(*v, drift);
  }
}

void Deployer::roll_back_if_drifting(ServingVersion& v, double drift) {
  if (!config_.auto_rollback || drift <= config_.max_ppl_drift || v.name() != rollback_eligible_) return;
  const std::string figures = fmt::format("validation perplexity {:.3f} is {:.3f}x its {:.3f} at deploy (bound {:.3f}x)",
                                          v.quality().perplexity.value(), drift, v.deploy_perplexity(),
                                          config_.max_ppl_drift);
  if (Status s = rollback(); !s.ok()) {
    log_error("auto-rollback of {} ({}) failed: {}", v.name(), figures, s.to_string());
    return;
  }
  count_decision("rolled_back", "drift");
  log_warn("auto-rollback: {} rolled back to {}: {}", v.name(), versions_.current()->name(), figures);
}

void Deployer::count_decision(const std::string& decision, const std::string& reason) {
  if (decision != "rolled_back") canary_decisions_.with({decision}).inc();
  quality_decisions_.with({decision, reason}).inc();
}

std::vector<CanarySignal> Deployer::canary_signals(ServingVersion& cand, ServingVersion& stable) const {
  const CanaryAutoConfig& c = config_.canary_auto;
  const TrafficStreams a = cand.sampler() ? cand.sampler()->streams() : TrafficStreams{};
  const TrafficStreams b = stable.sampler() ? stable.sampler()->streams() : TrafficStreams{};
  PairQuality q = monitor_ ? monitor_->pair() : PairQuality{};
  if (q.stable != stable.name() || q.candidate != cand.name()) q = {};  // not scored yet: undecided
  std::vector<CanarySignal> signals;
  if (config_.cross.share > 0) {  // else judged on errors, latency and abnormal outputs alone
    signals.push_back({"quality", q.candidate_nll, q.stable_nll, c.max_nll_increase, false, c.min_samples});
  }
  signals.push_back({"errors", a.errors, b.errors, c.max_error_rate_increase, false, c.min_samples});
  signals.push_back({"latency", a.log_itl, b.log_itl, std::log(c.max_latency_ratio), false, c.min_samples});
  signals.push_back({"abnormal", a.abnormal, b.abnormal, c.max_abnormal_rate_increase, true, c.min_samples});
  if (c.feedback_min > 0 && feedback_) signals.push_back(canary_feedback(cand.name(), stable.name()));
  return signals;
}

CanarySignal Deployer::canary_feedback(const std::string& cand, const std::string& stable) const {
  const CanaryAutoConfig& c = config_.canary_auto;
  const int64_t min_ratings = std::max(c.feedback_min, c.min_samples);  // the intervals are asymptotic
  if (feedback_start_.stable != stable || feedback_start_.candidate != cand) {
    return feedback_signal({}, {}, c.feedback_margin, min_ratings);  // not this canary's start: undecided
  }
  return feedback_signal(feedback_->stats(cand).ratings.since(feedback_start_.candidate_ratings),
                         feedback_->stats(stable).ratings.since(feedback_start_.stable_ratings), c.feedback_margin,
                         min_ratings);
}

void Deployer::decide_canary() {
  const CanaryAutoConfig& c = config_.canary_auto;
  const VersionPtr cand = versions_.candidate(), cur = versions_.current();
  if (c.requests <= 0 || !cand || !cur) return;
  const std::vector<CanarySignal> signals = canary_signals(*cand, *cur);
  const CanaryVerdict v = judge_canary(signals, c.alpha);
  const int64_t n = cand->sampler() ? cand->sampler()->streams().errors.n : 0;  // its finished requests
  log_debug("canary {} after {} requests: {}; {}", cand->name(), n, verdict_name(v.verdict), v.figures);
  if (v.verdict == Verdict::kWorse) {
    if (!abort_canary().ok()) return;
    count_decision("aborted", v.reason);
    log_warn("canary {} aborted automatically after {} requests: {} is worse; {}", cand->name(), n, v.reason,
             v.figures);
  } else if (v.verdict == Verdict::kNoWorse && n >= c.requests) {
    if (!promote().ok()) return;
    count_decision("promoted", "all_within_margins");
    log_info("canary {} promoted automatically after {} requests: no signal is worse; {}", cand->name(), n, v.figures);
  }
}

}  // namespace llms
