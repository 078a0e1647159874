// The mixture-of-experts FFN: a router picks each token's experts, the tokens are
// grouped by expert, and each chosen expert's matrices are multiplied once with all
// of its tokens' rows (a decode step reads only the experts its tokens chose).
#include <algorithm>
#include <cmath>
#include <optional>

#include "kernels/ops.h"
#include "model/model.h"
#include "model/rows.h"

namespace llms {

void Model::expert_ffn(int l, const float* xn, int64_t n, float* out, ForwardState& s, ThreadPool& pool) const {
  const ModelConfig& c = config_;
  const LayerWeights& L = weights_.layers[static_cast<size_t>(l)];
  const int64_t d = c.n_embd, ff = c.n_ff_exp;
  float* logits = s.router_logits_.as<float>();  // [n, n_expert]
  product(L.router, l, "ffn_gate_inp", xn, n, logits, s, pool);
  std::optional<ScopedStepPart> part(std::in_place, s.profile_, StepPart::kElementwise);
  ExpertRouting& r = s.routing_;
  r.route(logits, n, c.n_expert, c.n_expert_used, c.norm_expert_weights);
  if (s.expert_load_.empty()) s.expert_load_.assign(static_cast<size_t>(c.n_layer * c.n_expert), 0);
  for (int e = 0; e < c.n_expert; ++e) s.expert_load_[static_cast<size_t>(l * c.n_expert + e)] += r.count(e);
  std::fill(out, out + n * d, 0.0f);
  float* gathered = s.expert_in_.as<float>();  // [m, d]: one expert's tokens
  float* y = s.expert_out_.as<float>();        // [m, d]
  float* gate = s.gate_.as<float>();           // [m, ff]
  float* up = s.up_.as<float>();
  // Experts in index order: each token's output sums its experts' in that order,
  // whatever else the pass holds, so batches stay invariant.
  for (int e = 0; e < c.n_expert; ++e) {
    const int64_t m = r.count(e);
    if (m == 0) continue;
    const int32_t* tokens = r.tokens.data() + r.offsets[static_cast<size_t>(e)];
    const float* weight = r.weights.data() + r.offsets[static_cast<size_t>(e)];
    // Tokens are ascending: all n of them is xn itself.
    const float* in = xn;
    if (m < n) {
      for_rows(pool, m, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) std::copy_n(xn + tokens[i] * d, d, gathered + i * d);
      });
      in = gathered;
    }
    part.reset();
    const LayerWeights::Expert& E = L.experts[static_cast<size_t>(e)];
    const MatmulOutput outs[] = {{&E.gate, gate}, {&E.up, up}};
    const char* const whats[] = {"ffn_gate_exps", "ffn_up_exps"};
    products(outs, l, whats, in, m, s, pool);
    part.emplace(s.profile_, StepPart::kElementwise);
    for_rows(pool, m, [&](int64_t i0, int64_t i1) {
      silu_mul(gate + i0 * ff, up + i0 * ff, (i1 - i0) * ff, gate + i0 * ff);
    });
    part.reset();
    product(E.down, l, "ffn_down_exps", gate, m, y, s, pool);
    part.emplace(s.profile_, StepPart::kElementwise);
    // A token appears once per expert: the rows written are distinct.
    for_rows(pool, m, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        float* o = out + tokens[i] * d;
        const float* yi = y + i * d;
        for (int64_t j = 0; j < d; ++j) o[j] += weight[i] * yi[j];
      }
    });
  }
  if (c.n_ff_shexp == 0) return;
  // Qwen2-MoE: plus the shared expert, scaled by sigmoid(shexp_gate . xn).
  part.reset();
  dense_ffn(l, xn, n, y, s, pool);
  part.emplace(s.profile_, StepPart::kElementwise);
  for_rows(pool, n, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const float g = dot_f32(L.shexp_gate.data(), xn + t * d, d);
      const float scale = 1.0f / (1.0f + std::exp(-g));
      float* o = out + t * d;
      const float* yt = y + t * d;
      for (int64_t j = 0; j < d; ++j) o[j] += scale * yt[j];
    }
  });
}

}  // namespace llms
