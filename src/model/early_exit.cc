// Model::forward with confidence early exit (see early_exit.h): the layers of
// Model::forward, a check after each exit layer, the K/V fill of exited tokens'
// skipped layers, and the compaction of the rows still running.
#include "model/early_exit.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <sstream>
#include <type_traits>

#include "kernels/ops.h"
#include "model/model.h"
#include "model/rows.h"

namespace llms {

Status EarlyExitConfig::validate(int n_layer) const {
  if (!(threshold > 0.0 && threshold <= 1.0)) {
    return invalid_argument(fmt::format("--exit-threshold: {} is not in (0, 1] (1 = never exit)", threshold));
  }
  for (size_t i = 0; i < layers.size(); ++i) {
    const int l = layers[i];
    if (l < 1 || (n_layer >= 0 && l > n_layer - 1)) {
      return invalid_argument(
          n_layer >= 0 ? fmt::format("--exit-layers: {} is not in 1..{} (the layers run before the check; the model "
                                     "has {})",
                                     l, n_layer - 1, n_layer)
                       : fmt::format("--exit-layers: {} is not >= 1 (the layers run before the check)", l));
    }
    if (i > 0 && l <= layers[i - 1]) {
      return invalid_argument(fmt::format("--exit-layers: {} after {}: the layers must be strictly ascending", l,
                                          layers[i - 1]));
    }
  }
  return ok_status();
}

namespace {

// The comma-separated fields of `text`; INVALID_ARGUMENT naming `flag` if one is empty.
Result<std::vector<std::string>> fields(const std::string& text, const char* flag) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string f;
  while (std::getline(in, f, ',')) {
    if (f.empty()) return invalid_argument(fmt::format("{}: '{}' has an empty item", flag, text));
    out.push_back(f);
  }
  if (out.empty() || text.back() == ',') return invalid_argument(fmt::format("{}: '{}' has an empty item", flag, text));
  return out;
}

// The whole of `f` as a number (int or double); none when any of it is not.
template <typename T>
std::optional<T> whole_number(const std::string& f) {
  size_t used = 0;
  T v{};
  try {
    if constexpr (std::is_same_v<T, int>) {
      v = std::stoi(f, &used);
    } else {
      v = std::stod(f, &used);
    }
  } catch (...) {
    return std::nullopt;
  }
  if (used != f.size()) return std::nullopt;
  return v;
}

}  // namespace

Result<std::vector<int>> parse_exit_layers(const std::string& text) {
  LLMS_ASSIGN_OR_RETURN(const auto items, fields(text, "--exit-layers"));
  std::vector<int> layers;
  for (const auto& f : items) {
    const std::optional<int> v = whole_number<int>(f);
    if (!v) return invalid_argument(fmt::format("--exit-layers: '{}' is not a layer number", f));
    layers.push_back(*v);
  }
  EarlyExitConfig c;
  c.layers = layers;
  LLMS_RETURN_IF_ERROR(c.validate());
  return layers;
}

Result<std::vector<double>> parse_exit_thresholds(const std::string& text) {
  LLMS_ASSIGN_OR_RETURN(const auto items, fields(text, "--thresholds"));
  std::vector<double> out;
  for (const auto& f : items) {
    const std::optional<double> parsed = whole_number<double>(f);
    if (!parsed) return invalid_argument(fmt::format("--thresholds: '{}' is not a number", f));
    const double v = *parsed;
    EarlyExitConfig c;
    c.threshold = v;
    if (!c.validate().ok()) return invalid_argument(fmt::format("--thresholds: {} is not in (0, 1] (1 = never exit)", f));
    out.push_back(v);
  }
  return out;
}

HeadTop head_top(const float* logits, int64_t n_vocab) {
  int32_t best = 0;
  for (int64_t j = 1; j < n_vocab; ++j) {
    if (logits[j] > logits[best]) best = static_cast<int32_t>(j);
  }
  const double m = logits[best];
  double sum = 0;
  for (int64_t j = 0; j < n_vocab; ++j) sum += std::exp(static_cast<double>(logits[j]) - m);
  return {best, static_cast<float>(1.0 / sum)};
}

// One early-exit pass; a friend of Model and ForwardState (it drives their private
// blocks and rows).
class EarlyExitPass {
 public:
  EarlyExitPass(const Model& m, std::span<const SequenceChunk> chunks, KvCache& kv, ForwardState& s, ThreadPool& pool,
                const EarlyExitConfig& exit)
      : m_(m), c_(m.config_), chunks_(chunks), kv_(kv), s_(s), pool_(pool), exit_(exit) {}

  Status run(ForwardOutput& out);

 private:
  void start(ForwardOutput& out);
  // The exit check after `blocks` blocks: reads the head for the eligible rows, exits
  // those at or above the threshold, fills their K/V and compacts the rest.
  void check(int blocks, size_t point, ForwardOutput& out);
  // norm + head + softcap of `rows` (indices into the active rows) into head_logits_.
  void head(std::span<const int64_t> rows);
  // The K/V of layers [from, n_layer) for the active rows `rows`, from their hidden state.
  void fill_kv(std::span<const int64_t> rows, int from);
  // Keeps the active rows not marked in `gone`, in order, and rebuilds the runs.
  void compact(const std::vector<char>& gone);
  void rebuild_runs();
  void final_logits(ForwardOutput& out);
  int cs_size() const { return c_.rope_dim > 0 ? rope_table_size(c_.rope_dim, c_.rope_style) : 0; }

  const Model& m_;
  const ModelConfig& c_;
  std::span<const SequenceChunk> chunks_;
  KvCache& kv_;
  ForwardState& s_;
  ThreadPool& pool_;
  const EarlyExitConfig& exit_;
  int64_t n_ = 0;                  // active rows
  int64_t n_tokens_ = 0;           // tokens of the pass
  std::vector<int64_t> gathered_;  // scratch: active-row indices
};

Status EarlyExitPass::run(ForwardOutput& out) {
  LLMS_RETURN_IF_ERROR(exit_.validate(c_.n_layer));
  LLMS_RETURN_IF_ERROR(m_.validate(chunks_, kv_));
  for (const auto& ch : chunks_) {
    if (ch.adapter != nullptr) return invalid_argument("early exit does not apply LoRA adapters");
  }
  for (const auto& ch : chunks_) n_tokens_ += static_cast<int64_t>(ch.tokens.size());
  s_.reserve(c_, n_tokens_);
  m_.embed(chunks_, n_tokens_, s_, pool_);
  start(out);
  size_t point = 0;
  for (int l = 0; l < c_.n_layer && n_ > 0; ++l) {
    LLMS_RETURN_IF_ERROR(m_.attention_block(l, s_.runs_, n_, kv_, s_, pool_));
    LLMS_RETURN_IF_ERROR(m_.ffn_block(l, n_, s_, pool_));
    if (point < exit_.layers.size() && exit_.layers[point] == l + 1) check(l + 1, point++, out);
  }
  final_logits(out);
  return ok_status();
}

void EarlyExitPass::start(ForwardOutput& out) {
  n_ = n_tokens_;
  s_.row_origin_.resize(static_cast<size_t>(n_));
  s_.row_exit_from_.resize(static_cast<size_t>(n_));
  s_.row_out_.assign(static_cast<size_t>(n_), -1);
  out.first_row.assign(chunks_.size(), -1);
  out.n_vocab = c_.n_vocab;
  int64_t t = 0, rows = 0;
  for (size_t i = 0; i < chunks_.size(); ++i) {
    const SequenceChunk& ch = chunks_[i];
    const int64_t len = static_cast<int64_t>(ch.tokens.size());
    if (ch.logits != LogitsWanted::kNone) out.first_row[i] = rows;
    for (int64_t j = 0; j < len; ++j, ++t) {
      s_.row_origin_[static_cast<size_t>(t)] = t;
      s_.row_exit_from_[static_cast<size_t>(t)] = ch.early_exit_from;
      const bool wanted = ch.logits == LogitsWanted::kAll || (ch.logits == LogitsWanted::kLast && j == len - 1);
      if (wanted) s_.row_out_[static_cast<size_t>(t)] = rows++;
    }
  }
  out.logits.resize(static_cast<size_t>(rows * c_.n_vocab));
  out.exit_layer.assign(static_cast<size_t>(rows), c_.n_layer);
  if (ExitTrace* tr = s_.exit_trace_) {
    tr->exit_layer.assign(static_cast<size_t>(n_tokens_), c_.n_layer);
    const size_t lens = tr->lens ? static_cast<size_t>(n_tokens_) * exit_.layers.size() : 0;
    tr->lens_top.assign(lens, -1);
    tr->lens_p.assign(lens, -1.0f);
  }
  rebuild_runs();
}

void EarlyExitPass::check(int blocks, size_t point, ForwardOutput& out) {
  ExitTrace* tr = s_.exit_trace_;
  const bool can_exit = exit_.threshold < 1.0;
  if (!can_exit && (tr == nullptr || !tr->lens)) return;
  gathered_.clear();
  for (int64_t r = 0; r < n_; ++r) {
    if (s_.slots_[static_cast<size_t>(r)].pos >= s_.row_exit_from_[static_cast<size_t>(r)]) gathered_.push_back(r);
  }
  if (gathered_.empty()) return;
  const std::vector<int64_t>& candidates = gathered_;  // not changed below
  {
    const ScopedStepPart part(s_.profile_, StepPart::kLogits);
    head(candidates);
  }
  std::vector<char> gone(static_cast<size_t>(n_), 0);
  std::vector<int64_t> exited;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const int64_t r = candidates[i];
    const float* logits = s_.head_logits_.data() + static_cast<int64_t>(i) * c_.n_vocab;
    const HeadTop top = head_top(logits, c_.n_vocab);
    const int64_t origin = s_.row_origin_[static_cast<size_t>(r)];
    if (tr != nullptr && tr->lens) {
      const size_t at = static_cast<size_t>(origin) * exit_.layers.size() + point;
      tr->lens_top[at] = top.token;
      tr->lens_p[at] = top.p;
    }
    if (!can_exit || !(top.p >= exit_.threshold)) continue;
    gone[static_cast<size_t>(r)] = 1;
    exited.push_back(r);
    if (tr != nullptr) tr->exit_layer[static_cast<size_t>(origin)] = blocks;
    const int64_t row = s_.row_out_[static_cast<size_t>(origin)];
    if (row >= 0) {
      std::memcpy(out.logits.data() + row * c_.n_vocab, logits, static_cast<size_t>(c_.n_vocab) * sizeof(float));
      out.exit_layer[static_cast<size_t>(row)] = blocks;
    }
  }
  if (exited.empty()) return;
  fill_kv(exited, blocks);
  compact(gone);
}

void EarlyExitPass::head(std::span<const int64_t> rows) {
  s_.head_logits_.resize(rows.size() * static_cast<size_t>(c_.n_vocab));
  m_.head_rows(rows, s_.head_logits_.data(), s_, pool_);
}

void EarlyExitPass::fill_kv(std::span<const int64_t> rows, int from) {
  const int64_t m = static_cast<int64_t>(rows.size()), d = c_.n_embd;
  const float* x = s_.x_.as<float>();
  float* h = s_.tmp_.as<float>();  // [m, n_embd]: the exited rows' hidden states, gathered
  float* xn = s_.xn_.as<float>();  // [m, n_embd]
  float* k = s_.k_.as<float>();    // [m, kv_dim]
  float* v = s_.v_.as<float>();    // [m, kv_dim]
  for (int64_t r = 0; r < m; ++r) std::memcpy(h + r * d, x + rows[static_cast<size_t>(r)] * d, d * sizeof(float));
  const int cs = cs_size();
  const float* rope_cs = s_.rope_cs_.as<float>();
  const int64_t kvd = c_.kv_dim();
  for (int l = from; l < c_.n_layer; ++l) {
    const LayerWeights& L = m_.weights_.layers[static_cast<size_t>(l)];
    m_.norm_rows(h, L.attn_norm, L.attn_norm_b, m, xn, pool_);
    const MatmulOutput outs[] = {{&L.wk, k}, {&L.wv, v}};
    const char* const whats[] = {"attn_k", "attn_v"};
    m_.products(outs, l, whats, xn, m, s_, pool_);
    const ScopedStepPart part(s_.profile_, StepPart::kElementwise);
    const KvLayerView layer = kv_.layer(l);
    for_rows(pool_, m, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t row = rows[static_cast<size_t>(r)];
        float* kt = k + r * kvd;
        float* vt = v + r * kvd;
        if (!L.bk.empty()) {
          add_inplace(kt, L.bk.data(), kvd);
          add_inplace(vt, L.bv.data(), kvd);
        }
        if (cs > 0) rope_with(kt, c_.n_head_kv, c_.head_dim, c_.rope_dim, rope_cs + row * cs, c_.rope_style);
        const ForwardState::TokenSlot& slot = s_.slots_[static_cast<size_t>(row)];
        kv_store(layer, slot.block_table, slot.pos, kt, vt);
      }
    });
  }
}

void EarlyExitPass::compact(const std::vector<char>& gone) {
  const int64_t d = c_.n_embd;
  const int cs = cs_size();
  float* x = s_.x_.as<float>();
  float* rope_cs = s_.rope_cs_.as<float>();
  int64_t kept = 0;
  for (int64_t r = 0; r < n_; ++r) {
    if (gone[static_cast<size_t>(r)]) continue;
    if (kept != r) {
      const auto from = static_cast<size_t>(r), to = static_cast<size_t>(kept);
      std::memcpy(x + kept * d, x + r * d, static_cast<size_t>(d) * sizeof(float));
      if (cs > 0) std::memcpy(rope_cs + kept * cs, rope_cs + r * cs, static_cast<size_t>(cs) * sizeof(float));
      s_.slots_[to] = s_.slots_[from];
      s_.token_ids_[to] = s_.token_ids_[from];
      s_.row_origin_[to] = s_.row_origin_[from];
      s_.row_exit_from_[to] = s_.row_exit_from_[from];
    }
    ++kept;
  }
  n_ = kept;
  rebuild_runs();
}

// The active rows as attention queries: maximal runs of one sequence's consecutive
// positions (a token that exits inside a chunk splits it: the rows after it attend to
// its filled keys through the cache, as to any earlier position).
void EarlyExitPass::rebuild_runs() {
  s_.runs_.clear();
  for (int64_t r = 0; r < n_; ++r) {
    const ForwardState::TokenSlot& slot = s_.slots_[static_cast<size_t>(r)];
    if (!s_.runs_.empty()) {
      SequenceChunk& last = s_.runs_.back();
      const int64_t end = last.start_pos + static_cast<int64_t>(last.tokens.size());
      if (last.block_table.data() == slot.block_table && end == slot.pos) {
        last.tokens = std::span<const int32_t>(last.tokens.data(), last.tokens.size() + 1);
        continue;
      }
    }
    SequenceChunk run;
    run.tokens = std::span<const int32_t>(s_.token_ids_.data() + r, 1);
    run.start_pos = slot.pos;
    // attention_block reads only the table's data pointer.
    run.block_table = std::span<const int32_t>(slot.block_table, 1);
    s_.runs_.push_back(run);
  }
}

void EarlyExitPass::final_logits(ForwardOutput& out) {
  gathered_.clear();
  for (int64_t r = 0; r < n_; ++r) {
    if (s_.row_out_[static_cast<size_t>(s_.row_origin_[static_cast<size_t>(r)])] >= 0) gathered_.push_back(r);
  }
  if (gathered_.empty()) return;
  const ScopedStepPart part(s_.profile_, StepPart::kLogits);
  head(gathered_);
  for (size_t i = 0; i < gathered_.size(); ++i) {
    const int64_t row = s_.row_out_[static_cast<size_t>(s_.row_origin_[static_cast<size_t>(gathered_[i])])];
    std::memcpy(out.logits.data() + row * c_.n_vocab, s_.head_logits_.data() + static_cast<int64_t>(i) * c_.n_vocab,
                static_cast<size_t>(c_.n_vocab) * sizeof(float));
  }
}

Status Model::forward(std::span<const SequenceChunk> chunks, KvCache& kv, ForwardState& state, ThreadPool& pool,
                      const EarlyExitConfig& exit, ForwardOutput& out) const {
  if (shard_.split() || shard_.pipelined()) return unimplemented("early exit under tensor or pipeline parallelism");
  EarlyExitPass pass(*this, chunks, kv, state, pool, exit);
  return pass.run(out);
}

}  // namespace llms
