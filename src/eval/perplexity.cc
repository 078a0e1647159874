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

}  // namespace

Result<PerplexityResult> evaluate_perplexity(std::span<const int32_t> tokens, const EvalSide& model,
                                             const EvalSide& base, const PerplexityOptions& opts, ThreadPool& pool) {
  if (opts.ctx < 2) return invalid_argument("--ctx must be at least 2");
  if (static_cast<int64_t>(tokens.size()) < 2) return invalid_argument("the text has fewer than 2 tokens");
  const int n_vocab = model.model->config().n_vocab;
  if (base.model && base.model->config().n_vocab != n_vocab) {
    return invalid_argument(fmt::format("the base model's vocabulary ({}) differs from the model's ({})",
                                        base.model->config().n_vocab, n_vocab));
  }
  for (const EvalSide* side : {&model, &base}) {
    if (side->model == nullptr) continue;
    LLMS_RETURN_IF_ERROR(side->model->kv_config(1, 16, side->k_type, side->v_type).validate());
  }
  const int ctx = std::min<int>(opts.ctx, std::min(model.model->config().n_ctx_train,
                                                   base.model ? base.model->config().n_ctx_train : 1 << 30));
  WindowRunner runner(model, ctx);
  std::unique_ptr<WindowRunner> base_runner;
  if (base.model) base_runner = std::make_unique<WindowRunner>(base, ctx);

  PerplexityResult r;
  double nll = 0, base_nll = 0, kl = 0;
  int64_t agree = 0;
  std::vector<double> lp, base_lp;
  for (size_t start = 0; start + 1 < tokens.size(); start += static_cast<size_t>(ctx)) {
    if (opts.max_windows > 0 && r.windows >= opts.max_windows) break;
    const auto window = tokens.subspan(start, std::min<size_t>(static_cast<size_t>(ctx), tokens.size() - start));
    if (window.size() < 2) break;
    LLMS_RETURN_IF_ERROR(runner.run(window, pool));
    if (base_runner) LLMS_RETURN_IF_ERROR(base_runner->run(window, pool));
    for (size_t i = 0; i + 1 < window.size(); ++i) {
      const int32_t next = window[i + 1];
      log_softmax(runner.row(static_cast<int64_t>(i)), n_vocab, lp);
      nll -= lp[static_cast<size_t>(next)];
      if (base_runner) {
        log_softmax(base_runner->row(static_cast<int64_t>(i)), n_vocab, base_lp);
        base_nll -= base_lp[static_cast<size_t>(next)];
        double k = 0;
        for (int v = 0; v < n_vocab; ++v) k += std::exp(base_lp[v]) * (base_lp[v] - lp[v]);
        kl += k;
        const auto top = std::max_element(lp.begin(), lp.end()) - lp.begin();
        const auto base_top = std::max_element(base_lp.begin(), base_lp.end()) - base_lp.begin();
        agree += top == base_top;
      }
      ++r.scored_tokens;
    }
    ++r.windows;
  }
  const double n = static_cast<double>(r.scored_tokens);
  r.perplexity = std::exp(nll / n);
  if (base_runner) {
    r.base_perplexity = std::exp(base_nll / n);
    r.kl_divergence = kl / n;
    r.top1_agreement = static_cast<double>(agree) / n;
  }
  return r;
}

}  // namespace llms
