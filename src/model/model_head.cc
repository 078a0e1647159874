// The model's head: which rows of a step get logits and final hidden states, the final
// norm, the output projection and Gemma-2's final soft cap (Model::compute_logits()).
#include <cmath>

#include "model/model.h"
#include "model/rows.h"

namespace llms {

Status Model::compute_logits(std::span<const SequenceChunk> chunks, ForwardState& s, ThreadPool& pool,
                             ForwardOutput& out) const {
  const ModelConfig& c = config_;
  out.first_row.assign(chunks.size(), -1);
  out.exit_layer.clear();
  out.n_vocab = c.n_vocab;
  std::vector<int64_t>& src = s.logit_rows_;
  src.clear();
  int64_t t = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const auto& ch = chunks[i];
    const int64_t len = static_cast<int64_t>(ch.tokens.size());
    if (ch.logits != LogitsWanted::kNone) {
      out.first_row[i] = static_cast<int64_t>(src.size());
      for (int64_t j = ch.logits == LogitsWanted::kAll ? 0 : len - 1; j < len; ++j) src.push_back(t + j);
    }
    t += len;
  }
  // Under tensor parallelism only tensor rank 0 holds logits (rank 0 samples); a
  // pipeline's last stage computes them for rank 0.
  const bool holds = !shard_.split() || tensor_ranks_->rank() == 0;
  out.logits.resize(holds ? src.size() * static_cast<size_t>(c.n_vocab) : 0);
  if (!src.empty()) {
    if (shard_.split()) {
      LLMS_RETURN_IF_ERROR(split_head_rows(src, out.logits.data(), s, pool));
    } else {
      head_rows(src, out.logits.data(), s, pool);
    }
  }
  hidden_rows(chunks, s, pool, out);
  return ok_status();
}

void Model::hidden_rows(std::span<const SequenceChunk> chunks, ForwardState& s, ThreadPool& pool,
                        ForwardOutput& out) const {
  const ModelConfig& c = config_;
  out.first_hidden_row.assign(chunks.size(), -1);
  out.n_embd = c.n_embd;
  std::vector<int64_t> src;  // the token rows of s.x_ asked for
  int64_t t = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const int64_t len = static_cast<int64_t>(chunks[i].tokens.size());
    if (chunks[i].hidden) {
      out.first_hidden_row[i] = static_cast<int64_t>(src.size());
      for (int64_t j = 0; j < len; ++j) src.push_back(t + j);
    }
    t += len;
  }
  out.hidden.resize(src.size() * static_cast<size_t>(c.n_embd));  // [rows, n_embd]
  const float* x = s.x_.as<float>();
  float* h = out.hidden.data();
  for_rows(pool, static_cast<int64_t>(src.size()), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      norm_rows(x + src[static_cast<size_t>(r)] * c.n_embd, weights_.output_norm, weights_.output_norm_b, 1,
                h + r * c.n_embd);
    }
  });
}

void Model::head_rows(std::span<const int64_t> src, float* logits, ForwardState& s, ThreadPool& pool) const {
  const ModelConfig& c = config_;
  const float* x = s.x_.as<float>();
  float* xn = s.xn_.as<float>();  // gathered, normed rows [rows, n_embd]
  const int64_t rows = static_cast<int64_t>(src.size());
  for_rows(pool, rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      norm_rows(x + src[static_cast<size_t>(r)] * c.n_embd, weights_.output_norm, weights_.output_norm_b, 1,
                xn + r * c.n_embd);
    }
  });
  product(weights_.output, -1, "output", xn, rows, logits, s, pool);
  if (c.final_softcap > 0.0f) {
    const float cap = c.final_softcap, inv_cap = 1.0f / c.final_softcap;
    for (int64_t i = 0; i < rows * weights_.output.rows(); ++i) logits[i] = cap * std::tanh(logits[i] * inv_cap);
  }
}

}  // namespace llms
