#include "deploy/cross_score.h"

#include <algorithm>
#include <cmath>

namespace llms {

Result<CrossScore> cross_score(std::span<const int32_t> tokens, int64_t prompt_len, const EvalSide& self,
                               const EvalSide& other, ThreadPool& pool) {
  const auto ctx = static_cast<int64_t>(std::min(self.model->config().n_ctx_train, other.model->config().n_ctx_train));
  const auto n = static_cast<int64_t>(tokens.size());
  if (prompt_len < 1 || prompt_len >= n) return invalid_argument("cross_score: no prompt or no output");
  const int64_t start = std::max<int64_t>(0, n - ctx);
  const auto text = tokens.subspan(static_cast<size_t>(start));
  const int64_t first = std::max<int64_t>(1, prompt_len - start);  // first output token in `text`
  PerplexityOptions opts;
  opts.ctx = static_cast<int>(text.size());
  opts.max_windows = 1;
  LLMS_ASSIGN_OR_RETURN(ReferenceLogprobs a, record_logprobs(text, self, opts, pool));
  LLMS_ASSIGN_OR_RETURN(ReferenceLogprobs b, record_logprobs(text, other, opts, pool));
  if (a.n_vocab != b.n_vocab) return invalid_argument("cross_score: the two vocabularies differ");
  CrossScore out;
  const auto v = static_cast<size_t>(a.n_vocab);
  for (int64_t i = first; i < static_cast<int64_t>(text.size()); ++i) {  // row i-1 predicts token i
    const float* la = a.logprobs.data() + static_cast<size_t>(i - 1) * v;
    const float* lb = b.logprobs.data() + static_cast<size_t>(i - 1) * v;
    const auto t = static_cast<size_t>(text[static_cast<size_t>(i)]);
    out.nll_self -= la[t];
    out.nll_other -= lb[t];
    double kl = 0;
    for (size_t j = 0; j < v; ++j) kl += std::exp(static_cast<double>(la[j])) * (la[j] - lb[j]);
    out.kl += std::max(0.0, kl);
    ++out.tokens;
  }
  const auto k = static_cast<double>(out.tokens);
  out.nll_self /= k;
  out.nll_other /= k;
  out.kl /= k;
  return out;
}

}  // namespace llms
