#include "eval/perplexity.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace llms {
namespace {

// Log-softmax of one row, in double for stable sums.
void log_softmax(const float* logits, int n, std::vector<double>& out) {
  out.resize(static_cast<size_t>(n));
  const double mx = *std::max_element(logits, logits + n);
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += std::exp(logits[i] - mx);
  const double lse = mx + std::log(sum);
  for (int i = 0; i < n; ++i) out[i] = logits[i] - lse;
}

// Runs one window through a model; logits for every position.
class WindowRunner {
 public:
  WindowRunner(const EvalSide& side, int ctx)
      : side_(side),
        kv_(side.model->kv_config((ctx + 15) / 16, 16, side.k_type, side.v_type)) {
    for (int32_t b = 0; b < kv_.num_blocks(); ++b) table_.push_back(b);
  }
  Status run(std::span<const int32_t> window, ThreadPool& pool) {
    SequenceChunk c{window, 0, table_, LogitsWanted::kAll};
    return side_.model->forward({&c, 1}, kv_, state_, pool, out_);
  }
  const float* row(int64_t i) const { return out_.row(i); }

 private:
  EvalSide side_;
  KvCache kv_;
  std::vector<int32_t> table_;
  ForwardState state_;
  ForwardOutput out_;
};

// The sums behind PerplexityResult, one scored position at a time.
class Tally {
 public:
  explicit Tally(int n_vocab) : n_vocab_(n_vocab) {}
  // `lp` is the model's log-softmax row for the position, `base_lp` the base's (or
  // null), `next` the token that follows.
  void add(const double* lp, const double* base_lp, int32_t next) {
    nll_ -= lp[next];
    if (base_lp) {
      base_nll_ -= base_lp[next];
      double k = 0;
      for (int v = 0; v < n_vocab_; ++v) k += std::exp(base_lp[v]) * (base_lp[v] - lp[v]);
      kl_ += k;
      agree_ += std::max_element(lp, lp + n_vocab_) == lp + (std::max_element(base_lp, base_lp + n_vocab_) - base_lp);
    }
    ++scored_;
  }
  PerplexityResult result(int windows, bool with_base) const {
    PerplexityResult r;
    const double n = static_cast<double>(scored_);
    r.scored_tokens = scored_;
    r.windows = windows;
    r.perplexity = std::exp(nll_ / n);
    if (with_base) {
      r.base_perplexity = std::exp(base_nll_ / n);
      r.kl_divergence = kl_ / n;
      r.top1_agreement = static_cast<double>(agree_) / n;
    }
    return r;
  }

 private:
  int n_vocab_;
  double nll_ = 0, base_nll_ = 0, kl_ = 0;
  int64_t agree_ = 0, scored_ = 0;
};

Status check_side(const EvalSide& side) { return side.model->kv_config(1, 16, side.k_type, side.v_type).validate(); }

Status check_text(std::span<const int32_t> tokens, const PerplexityOptions& opts) {
  if (opts.ctx < 2) return invalid_argument("--ctx must be at least 2");
  if (static_cast<int64_t>(tokens.size()) < 2) return invalid_argument("the text has fewer than 2 tokens");
  return ok_status();
}

// Calls fn(window) for the windows of `ctx` tokens the options score; returns how many.
template <typename Fn>
Result<int> for_each_window(std::span<const int32_t> tokens, int ctx, const PerplexityOptions& opts, Fn&& fn) {
  int windows = 0;
  for (size_t start = 0; start + 1 < tokens.size(); start += static_cast<size_t>(ctx)) {
    if (opts.max_windows > 0 && windows >= opts.max_windows) break;
    const auto window = tokens.subspan(start, std::min<size_t>(static_cast<size_t>(ctx), tokens.size() - start));
    if (window.size() < 2) break;
    LLMS_RETURN_IF_ERROR(fn(window));
    ++windows;
  }
  return windows;
}

}  // namespace

Result<PerplexityResult> evaluate_perplexity(std::span<const int32_t> tokens, const EvalSide& model,
                                             const EvalSide& base, const PerplexityOptions& opts, ThreadPool& pool) {
  LLMS_RETURN_IF_ERROR(check_text(tokens, opts));
  const int n_vocab = model.model->config().n_vocab;
  if (base.model && base.model->config().n_vocab != n_vocab) {
    return invalid_argument(fmt::format("the base model's vocabulary ({}) differs from the model's ({})",
                                        base.model->config().n_vocab, n_vocab));
  }
  for (const EvalSide* side : {&model, &base}) {
    if (side->model != nullptr) LLMS_RETURN_IF_ERROR(check_side(*side));
  }
  const int ctx = std::min<int>(opts.ctx, std::min(model.model->config().n_ctx_train,
                                                   base.model ? base.model->config().n_ctx_train : 1 << 30));
  WindowRunner runner(model, ctx);
  std::unique_ptr<WindowRunner> base_runner;
  if (base.model) base_runner = std::make_unique<WindowRunner>(base, ctx);
  Tally tally(n_vocab);
  std::vector<double> lp, base_lp;
  LLMS_ASSIGN_OR_RETURN(const int windows, for_each_window(tokens, ctx, opts, [&](std::span<const int32_t> window) {
    LLMS_RETURN_IF_ERROR(runner.run(window, pool));
    if (base_runner) LLMS_RETURN_IF_ERROR(base_runner->run(window, pool));
    for (size_t i = 0; i + 1 < window.size(); ++i) {
      log_softmax(runner.row(static_cast<int64_t>(i)), n_vocab, lp);
      if (base_runner) log_softmax(base_runner->row(static_cast<int64_t>(i)), n_vocab, base_lp);
      tally.add(lp.data(), base_runner ? base_lp.data() : nullptr, window[i + 1]);
    }
    return ok_status();
  }));
  return tally.result(windows, base.model != nullptr);
}

Result<ReferenceLogprobs> record_logprobs(std::span<const int32_t> tokens, const EvalSide& side,
                                          const PerplexityOptions& opts, ThreadPool& pool) {
  LLMS_RETURN_IF_ERROR(check_text(tokens, opts));
  LLMS_RETURN_IF_ERROR(check_side(side));
  ReferenceLogprobs ref;
  ref.n_vocab = side.model->config().n_vocab;
  ref.ctx = std::min(opts.ctx, side.model->config().n_ctx_train);
  ref.tokens.assign(tokens.begin(), tokens.end());
  WindowRunner runner(side, ref.ctx);
  std::vector<double> lp;
  LLMS_ASSIGN_OR_RETURN(ref.windows, for_each_window(tokens, ref.ctx, opts, [&](std::span<const int32_t> window) {
    LLMS_RETURN_IF_ERROR(runner.run(window, pool));
    for (size_t i = 0; i + 1 < window.size(); ++i) {
      log_softmax(runner.row(static_cast<int64_t>(i)), ref.n_vocab, lp);
      ref.logprobs.insert(ref.logprobs.end(), lp.begin(), lp.end());
    }
    return ok_status();
  }));
  return ref;
}

Result<PerplexityResult> evaluate_against(const ReferenceLogprobs& ref, const EvalSide& side, ThreadPool& pool) {
  if (side.model->config().n_vocab != ref.n_vocab) {
    return invalid_argument(fmt::format("the model's vocabulary ({}) differs from the reference's ({})",
                                        side.model->config().n_vocab, ref.n_vocab));
  }
  LLMS_RETURN_IF_ERROR(check_side(side));
  WindowRunner runner(side, ref.ctx);
  Tally tally(ref.n_vocab);
  std::vector<double> lp, base_lp(static_cast<size_t>(ref.n_vocab));
  size_t row = 0;
  PerplexityOptions opts;
  opts.ctx = ref.ctx;
  opts.max_windows = ref.windows;
  LLMS_ASSIGN_OR_RETURN(const int windows, for_each_window(ref.tokens, ref.ctx, opts, [&](std::span<const int32_t> window) {
    LLMS_RETURN_IF_ERROR(runner.run(window, pool));
    for (size_t i = 0; i + 1 < window.size(); ++i, ++row) {
      log_softmax(runner.row(static_cast<int64_t>(i)), ref.n_vocab, lp);
      const float* r = ref.logprobs.data() + row * static_cast<size_t>(ref.n_vocab);
      std::copy(r, r + ref.n_vocab, base_lp.begin());
      tally.add(lp.data(), base_lp.data(), window[i + 1]);
    }
    return ok_status();
  }));
  return tally.result(windows, true);
}

}  // namespace llms
