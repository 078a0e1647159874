// The forward pass of a pipeline stage (tensor_shard.h, SplitKind::kPipeline). Every
// rank runs the same pass (engine/step_plan.h) over its own layers and its own KV
// cache (its layers only), the chunks cut into micro-batches so that the stages
// overlap: while stage 1 runs micro-batch 0, stage 0 runs micro-batch 1. Sends are
// buffered (Communicator::send()), so no stage waits for the next to take its rows;
// messages between two ranks arrive in order, so micro-batches need no labels.
//
//   stage 0 (rank 0):  embed mb0 → layers → send ─┐ embed mb1 → layers → send ─┐ … receive logits
//   stage k:           receive mb0 → layers → send, receive mb1 → …
//   last stage:        receive mb0 → layers → head → logits (and hidden rows) to rank 0, …
//
// Splitting a pass at chunk boundaries leaves every token's arithmetic as it was (a
// chunk's attention reads its own sequence's blocks only; batch invariance), so
// the logits are the single process's.
//
// With tensor parallelism in each stage (a grid), every tensor rank of a stage holds
// the whole hidden rows after its allreduce and sends them to the same tensor rank of
// the next stage; the last stage's tensor rank 0 holds the gathered logits and sends
// them to rank 0 (stage 0's tensor rank 0) over its column.
#include <fmt/format.h>

#include "model/model.h"

namespace llms {
namespace {

// Boundaries of up to `parts` contiguous runs of chunks with about as many tokens each.
void cut_micro_batches(std::span<const SequenceChunk> chunks, int parts, std::vector<size_t>& cuts) {
  int64_t total = 0;
  for (const auto& ch : chunks) total += static_cast<int64_t>(ch.tokens.size());
  cuts.assign(1, 0);
  int64_t seen = 0;
  for (size_t i = 0; i + 1 < chunks.size(); ++i) {
    seen += static_cast<int64_t>(chunks[i].tokens.size());
    const auto runs = static_cast<int64_t>(cuts.size());  // runs started so far
    if (runs < parts && seen * parts >= total * runs) cuts.push_back(i + 1);
  }
  cuts.push_back(chunks.size());
}

// The rows of logits and of hidden states the chunks ask for.
void count_rows(std::span<const SequenceChunk> chunks, int64_t& logits, int64_t& hidden) {
  logits = hidden = 0;
  for (const auto& ch : chunks) {
    const auto len = static_cast<int64_t>(ch.tokens.size());
    if (ch.logits != LogitsWanted::kNone) logits += ch.logits == LogitsWanted::kAll ? len : 1;
    if (ch.hidden) hidden += len;
  }
}

}  // namespace

Status Model::forward_pipelined(std::span<const SequenceChunk> chunks, KvCache& kv, ForwardState& s, ThreadPool& pool,
                                ForwardOutput& out) const {
  const ModelConfig& c = config_;
  const int stage = shard_.stage;
  cut_micro_batches(chunks, shard_.stages, s.micro_cuts_);
  for (size_t m = 0; m + 1 < s.micro_cuts_.size(); ++m) {
    const std::span<const SequenceChunk> mb = chunks.subspan(s.micro_cuts_[m], s.micro_cuts_[m + 1] - s.micro_cuts_[m]);
    int64_t n = 0;
    for (const auto& ch : mb) n += static_cast<int64_t>(ch.tokens.size());
    s.reserve(c, n);
    const std::span<float> rows(s.x(), static_cast<size_t>(n * c.n_embd));  // [n, n_embd]
    embed(mb, n, s, pool);  // a later stage: slots and RoPE tables only
    if (!shard_.first_stage()) LLMS_RETURN_IF_ERROR(stage_ranks_->recv(stage - 1, rows));
    LLMS_RETURN_IF_ERROR(run_layers(mb, n, kv, s, pool));
    if (!shard_.last_stage()) {
      LLMS_RETURN_IF_ERROR(stage_ranks_->send(stage + 1, rows));
      continue;
    }
    {
      const ScopedStepPart part(s.profile_, StepPart::kLogits);
      LLMS_RETURN_IF_ERROR(compute_logits(mb, s, pool, s.stage_out_));
    }
    if (tensor_ranks_->rank() != 0) continue;  // rank 0's column alone carries the outputs
    if (!s.stage_out_.logits.empty()) LLMS_RETURN_IF_ERROR(stage_ranks_->send(0, s.stage_out_.logits));
    if (!s.stage_out_.hidden.empty()) LLMS_RETURN_IF_ERROR(stage_ranks_->send(0, s.stage_out_.hidden));
  }
  out.logits.clear();
  out.hidden.clear();
  out.first_row.clear();
  out.first_hidden_row.clear();
  out.exit_layer.clear();
  if (ranks_->rank() == 0) LLMS_RETURN_IF_ERROR(receive_outputs(chunks, s, out));
  // Nothing stays in flight past the pass (the next may reuse nothing of it).
  return stage_ranks_->flush_sends();
}

Status Model::receive_outputs(std::span<const SequenceChunk> chunks, ForwardState& s, ForwardOutput& out) const {
  const ModelConfig& c = config_;
  out.n_vocab = c.n_vocab;
  out.n_embd = c.n_embd;
  out.first_row.assign(chunks.size(), -1);
  out.first_hidden_row.assign(chunks.size(), -1);
  int64_t logit_rows = 0, hidden_rows = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    int64_t l = 0, h = 0;
    count_rows(chunks.subspan(i, 1), l, h);
    if (l > 0) out.first_row[i] = logit_rows;
    if (h > 0) out.first_hidden_row[i] = hidden_rows;
    logit_rows += l;
    hidden_rows += h;
  }
  out.logits.resize(static_cast<size_t>(logit_rows * c.n_vocab));  // [rows, n_vocab]
  out.hidden.resize(static_cast<size_t>(hidden_rows * c.n_embd));  // [rows, n_embd]
  const int last = shard_.stages - 1;
  int64_t logits_at = 0, hidden_at = 0;
  for (size_t m = 0; m + 1 < s.micro_cuts_.size(); ++m) {
    int64_t l = 0, h = 0;
    count_rows(chunks.subspan(s.micro_cuts_[m], s.micro_cuts_[m + 1] - s.micro_cuts_[m]), l, h);
    if (l > 0) {
      LLMS_RETURN_IF_ERROR(stage_ranks_->recv(last, std::span<float>(out.logits).subspan(
                                                  static_cast<size_t>(logits_at * c.n_vocab), static_cast<size_t>(l * c.n_vocab))));
    }
    if (h > 0) {
      LLMS_RETURN_IF_ERROR(stage_ranks_->recv(last, std::span<float>(out.hidden).subspan(
                                                  static_cast<size_t>(hidden_at * c.n_embd), static_cast<size_t>(h * c.n_embd))));
    }
    logits_at += l;
    hidden_at += h;
  }
  return ok_status();
}

}  // namespace llms
