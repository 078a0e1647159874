// Model: a loaded model (GGUF, or a Hugging Face directory read as GGUF) (config, immutable weights, the file mapping they view)
// and its forward pass over a batch of sequence chunks.
//
// Ownership: the Model holds no request state. The caller owns the KV cache, the
// block tables, the activation workspace (ForwardState) and the thread pool.
// Thread-safety: const methods may be called from any thread, but one ForwardState
// and one KvCache belong to one caller at a time.
#pragma once

#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/hash.h"
#include "base/step_profile.h"
#include "base/thread_pool.h"
#include "dist/communicator.h"
#include "io/gguf_file.h"
#include "kernels/attention.h"
#include "kernels/lora.h"
#include "kernels/matmul.h"
#include "kv/kv_cache.h"
#include "model/batch.h"
#include "model/config.h"
#include "model/routing.h"
#include "model/tensor_shard.h"
#include "model/weights.h"

namespace llms {

class EarlyExitPass;
struct EarlyExitConfig;
struct ExitTrace;

// Sees the input of every matrix product of a forward pass (quantization analysis).
class MatmulObserver {
 public:
  virtual ~MatmulObserver() = default;
  // x: [n, w.cols()], the activations multiplied by the weight `name`.
  virtual void on_matmul(const std::string& name, const WeightMatrix& w, const float* x, int64_t n) = 0;
};

// Activation buffers reused across forward passes; they grow to the largest batch.
class ForwardState {
 public:
  float* x() { return x_.as<float>(); }
  void reserve(const ModelConfig& c, int64_t n_tokens);
  // Calls `observer` (not owned; null to stop) for every product of later passes.
  void set_observer(MatmulObserver* observer) { observer_ = observer; }
  // The longest sequence the caller runs (its context). LongRoPE models (Phi-3 128k)
  // rotate with their long factors when it passes their trained context, as llama.cpp
  // does; by context rather than by sequence, so that a sequence's keys never change
  // rotation and batches stay invariant. 0 (default): the short factors.
  void set_context_length(int n) { context_length_ = n; }
  // Times the parts of later passes into `profile` (not owned; null to stop).
  void set_profile(StepProfile* profile) { profile_ = profile; }
  // Of a mixture of experts: the tokens routed to each expert over every pass so far,
  // [n_layer * n_expert] (layer-major); empty for a dense model.
  const std::vector<int64_t>& expert_load() const { return expert_load_; }
  void reset_expert_load() { std::fill(expert_load_.begin(), expert_load_.end(), 0); }
  // Early exit (model/early_exit.h): records what later passes decide per token into
  // `trace` (not owned; null to stop).
  void set_exit_trace(ExitTrace* trace) { exit_trace_ = trace; }

 private:
  friend class Model;
  friend class EarlyExitPass;
  MatmulObserver* observer_ = nullptr;
  StepProfile* profile_ = nullptr;
  // Per token of the pass: its position and its sequence's block table.
  struct TokenSlot {
    int64_t pos;
    const int32_t* block_table;
  };
  std::vector<TokenSlot> slots_;
  std::vector<int32_t> token_ids_;
  std::vector<int64_t> logit_rows_;      // the token row of each row of logits
  std::vector<AttentionQuery> queries_;  // one layer's, reused
  AlignedBuffer rope_cs_;                // [n_tokens, rope_table_size()]: RoPE's cos and sin per token
  int context_length_ = 0;
  int64_t capacity_ = 0;
  AlignedBuffer x_, xn_, q_, k_, v_, att_, tmp_, gate_, up_;
  // Mixture of experts: router logits, the routing, one expert's gathered input and
  // output rows, and the load counts.
  AlignedBuffer router_logits_, expert_in_, expert_out_;
  ExpertRouting routing_;
  std::vector<int64_t> expert_load_;
  // Early exit: the trace, and the pass's scratch (early_exit.cc).
  ExitTrace* exit_trace_ = nullptr;
  std::vector<float> head_logits_;       // [candidates, n_vocab]
  std::vector<int64_t> row_origin_;      // per active row: its token index in the pass
  std::vector<int64_t> row_out_;         // per token of the pass: its row of logits, or -1
  std::vector<int64_t> row_exit_from_;   // per active row: its chunk's early_exit_from
  std::vector<SequenceChunk> runs_;      // the active rows as runs of consecutive positions
  // Adapters (model/lora.h): the pass's token rows grouped by adapter (the first
  // num_adapter_groups_ entries; the vectors are kept for reuse), one product's tasks.
  struct AdapterGroup {
    const LoraAdapter* adapter = nullptr;
    std::vector<int32_t> tokens;
  };
  std::vector<AdapterGroup> adapter_groups_;
  size_t num_adapter_groups_ = 0;
  std::vector<LoraTask> lora_tasks_;
  // Tensor parallelism: this rank's logits [rows, its vocabulary share], and on rank 0
  // every rank's, in rank order, before they are interleaved into whole rows.
  std::vector<float> head_part_, head_all_;
  // Pipeline parallelism: the pass's micro-batches (chunk index boundaries), and the
  // last stage's output of one micro-batch before it goes to rank 0.
  std::vector<size_t> micro_cuts_;
  ForwardOutput stage_out_;
};

// A norm's weights (RMSNorm: b empty); null w: none.
struct NormWeights {
  const std::vector<float>* w = nullptr;
  const std::vector<float>* b = nullptr;
};

class Model {
 public:
  // Opens, validates and maps the model: a GGUF file or a Hugging Face directory
  // (io/hf_model.h). The error names the file and what is wrong.
  // With `ranks` (not owned; it must outlive the model) of `parallel.ranks()` > 1,
  // this process loads only its share of the weights (tensor_shard.h): under tensor
  // parallelism every forward pass adds the partial sums of the ranks sharing its
  // layers; under pipeline parallelism it holds its stage's layers, and each pass's
  // hidden states go stage to stage (model_pipeline.cc); both, on a grid (the
  // sub-groups of each are split from `ranks` here, a collective). Null: one process.
  // INVALID_ARGUMENT when `ranks` is not of parallel.ranks().
  static Result<std::unique_ptr<Model>> load(const std::string& path, Communicator* ranks = nullptr,
                                             Parallelism parallel = {});
  static Result<std::unique_ptr<Model>> from_file(GgufFile file, Communicator* ranks = nullptr,
                                                  Parallelism parallel = {});

  // This rank's hyperparameters: under tensor parallelism its share's head counts and
  // FFN widths (so KV sizing and activations are per rank); n_vocab is whole.
  const ModelConfig& config() const { return config_; }
  const TensorShard& shard() const { return shard_; }
  // The whole group every forward pass runs on (a LocalCommunicator for one process).
  // Every rank must run the same passes in the same order (engine/step_plan.h).
  Communicator& ranks() const { return *ranks_; }
  const ModelWeights& weights() const { return weights_; }
  const GgufFile& file() const { return file_; }
  // The weights' memory, with the file mapping's resident bytes read now.
  WeightsMemory weights_memory() const;
  // Changes whenever the weights or hyperparameters change; keys caches.
  Hash128 identity() const { return identity_; }

  // RoPE's inverse frequencies [rope_dim / 2], divisors and scaling applied: the table
  // for the short (or only) factor set, or LongRoPE's long one (empty if none).
  const std::vector<float>& rope_inv_freq(bool long_factors) const { return long_factors ? inv_freq_long_ : inv_freq_; }

  // A KV cache config for this model with `num_blocks` blocks (of a pipeline stage:
  // its layers only).
  KvCacheConfig kv_config(int32_t num_blocks, int block_size, DType k_type, DType v_type) const;

  // Runs the chunks; writes their keys and values into `kv` and the logits asked for
  // into `out`. INVALID_ARGUMENT for a token id outside the vocabulary or a block
  // table too short for the positions.
  Status forward(std::span<const SequenceChunk> chunks, KvCache& kv, ForwardState& state, ThreadPool& pool,
                 ForwardOutput& out) const;
  // The same with confidence early exit for the tokens each chunk allows
  // (SequenceChunk::early_exit_from); defined in model/early_exit.cc, described in
  // model/early_exit.h. Also INVALID_ARGUMENT for exit settings this model cannot have.
  Status forward(std::span<const SequenceChunk> chunks, KvCache& kv, ForwardState& state, ThreadPool& pool,
                 const EarlyExitConfig& exit, ForwardOutput& out) const;

 private:
  friend class EarlyExitPass;
  Model(GgufFile file, Communicator* ranks) : file_(std::move(file)), ranks_(ranks) {}
  // The embedding rows of the chunks' tokens into state.x_ [n_tokens, n_embd], with
  // each token's slot and RoPE table (a later pipeline stage: slots and tables only).
  void embed(std::span<const SequenceChunk> chunks, int64_t n_tokens, ForwardState& s, ThreadPool& pool) const;
  // The chunks' token rows grouped by adapter into s.adapter_groups_ (model/lora_pass.cc).
  void group_adapters(std::span<const SequenceChunk> chunks, ForwardState& s) const;
  // Adds each adapter's low-rank products to the products `outs` of x (n rows) just
  // computed (model/lora_pass.cc).
  void add_adapters(std::span<const MatmulOutput> outs, int layer, std::span<const char* const> whats, const float* x,
                    ForwardState& s, ThreadPool& pool) const;
  Status validate(std::span<const SequenceChunk> chunks, const KvCache& kv) const;
  // This rank's layers (all of them, or a pipeline stage's) over the rows of state.x_;
  // the first normalises its own input.
  Status run_layers(std::span<const SequenceChunk> chunks, int64_t n_tokens, KvCache& kv, ForwardState& s,
                    ThreadPool& pool) const;
  // The pass of a pipeline stage (model_pipeline.cc): the chunks in micro-batches, each
  // embedded (first stage) or received from the stage before, run through this
  // stage's layers, and sent on; the last stage sends the logits and hidden rows to
  // rank 0, which alone fills `out`.
  Status forward_pipelined(std::span<const SequenceChunk> chunks, KvCache& kv, ForwardState& s, ThreadPool& pool,
                           ForwardOutput& out) const;
  // Rank 0: out's row indices for the whole pass, and the logits and hidden rows of
  // each micro-batch received from the last stage into their places.
  Status receive_outputs(std::span<const SequenceChunk> chunks, ForwardState& s, ForwardOutput& out) const;
  // A block reads the normed rows state.xn_ and adds its output to state.x_. With
  // input_normed, xn_ already holds this block's input norm of x_ (the block before
  // computed it); with `next`, the block leaves next's norm of the new x_ in xn_, in
  // the same pass over the rows as the residual: one pool job fewer per block, and
  // the same arithmetic per row.
  // Each ends with the allreduce of its partial sums across the ranks (its only
  // error: a failed rank).
  Status attention_block(int layer, std::span<const SequenceChunk> chunks, int64_t n_tokens, KvCache& kv,
                         ForwardState& s, ThreadPool& pool, bool input_normed = false, NormWeights next = {}) const;
  Status ffn_block(int layer, int64_t n_tokens, ForwardState& s, ThreadPool& pool, bool input_normed = false,
                   NormWeights next = {}) const;
  // The dense FFN of the normed rows xn into out [n, n_embd] (Qwen2-MoE: the shared expert).
  void dense_ffn(int layer, const float* xn, int64_t n, float* out, ForwardState& s, ThreadPool& pool) const;
  // The mixture of experts of the normed rows xn into out [n, n_embd] (model/experts.cc).
  void expert_ffn(int layer, const float* xn, int64_t n, float* out, ForwardState& s, ThreadPool& pool) const;
  // out[t] = norm(x[t]) for n rows of n_embd: RMSNorm, or LayerNorm with bias `b`.
  void norm_rows(const float* x, const std::vector<float>& w, const std::vector<float>& b, int64_t n, float* out) const;
  // The same, rows split across the pool.
  void norm_rows(const float* x, const std::vector<float>& w, const std::vector<float>& b, int64_t n, float* out,
                 ThreadPool& pool) const;
  // x[t] += bias (may be empty), post-norm (may be empty) and residual: x += y, for n
  // rows; then, with next.w, xn[t] = next's norm of the new x[t].
  void add_residual(float* x, float* y, const std::vector<float>& bias, const std::vector<float>& post_norm, int64_t n,
                    ThreadPool& pool, NormWeights next = {}, float* xn = nullptr) const;
  // The logits asked for into `out` (on rank 0 only under tensor parallelism).
  Status compute_logits(std::span<const SequenceChunk> chunks, ForwardState& s, ThreadPool& pool,
                        ForwardOutput& out) const;
  // Tensor parallelism: each rank's share of the head for the rows `src`, gathered
  // whole into `logits` [src.size(), n_vocab] on rank 0 (model_parallel.cc).
  Status split_head_rows(std::span<const int64_t> src, float* logits, ForwardState& s, ThreadPool& pool) const;
  // The final-normed hidden states of the chunks that ask for them (SequenceChunk::hidden)
  // into out.hidden.
  void hidden_rows(std::span<const SequenceChunk> chunks, ForwardState& s, ThreadPool& pool, ForwardOutput& out) const;
  // The final norm, the output head and its soft-capping of the hidden rows `src` (of
  // s.x_) into `logits` [src.size(), the head's rows: n_vocab, or this rank's share].
  void head_rows(std::span<const int64_t> src, float* logits, ForwardState& s, ThreadPool& pool) const;
  // One product of x with each of `outs` (the weights named whats[i]) in one pool job
  // (matmul_shared_input()), also reported to the state's observer.
  void products(std::span<const MatmulOutput> outs, int layer, std::span<const char* const> whats, const float* x,
                int64_t n, ForwardState& s, ThreadPool& pool) const;
  void product(const WeightMatrix& w, int layer, const char* what, const float* x, int64_t n, float* y,
               ForwardState& s, ThreadPool& pool) const {
    const MatmulOutput out{&w, y};
    products({&out, 1}, layer, {&what, 1}, x, n, s, pool);
  }

  GgufFile file_;
  Communicator* ranks_;         // the group (rank 0's plans reach every rank on it)
  // The ranks sharing this rank's layers (allreduces, the head's gather), and this
  // tensor rank's column of stages (rank = stage: hidden states and logits): ranks_
  // itself, a group of one (LocalCommunicator), or a subgroup split from ranks_.
  Communicator* tensor_ranks_ = nullptr;
  Communicator* stage_ranks_ = nullptr;
  std::vector<std::unique_ptr<Communicator>> subgroups_;  // split from ranks_ on a grid
  TensorShard shard_;
  ModelConfig config_;
  ModelWeights weights_;
  std::vector<float> inv_freq_;       // [rope_dim / 2], with rope_freqs or LongRoPE's short factors
  std::vector<float> inv_freq_long_;  // [rope_dim / 2] with LongRoPE's long factors; else empty
  Hash128 identity_;
};

}  // namespace llms
