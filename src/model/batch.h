// The input and output of one forward pass over a ragged batch: prefill chunks of
// some sequences and single decode tokens of others, with no padding.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace llms {

class LoraAdapter;

// SequenceChunk::early_exit_from when no token of the chunk may exit early.
inline constexpr int64_t kNoEarlyExit = std::numeric_limits<int64_t>::max();

enum class LogitsWanted {
  kNone,  // a prefill chunk that is not the prompt's last
  kLast,  // the usual case: the next-token distribution
  kAll,   // every position (perplexity, echo with logprobs)
};

struct SequenceChunk {
  std::span<const int32_t> tokens;       // the new tokens
  int64_t start_pos = 0;                 // position of tokens[0]; the cache holds [0, start_pos)
  std::span<const int32_t> block_table;  // covers start_pos + tokens.size() positions
  LogitsWanted logits = LogitsWanted::kLast;
  // Tokens at positions from here on may stop at an exit layer (model/early_exit.h);
  // only the overload of Model::forward that takes exit settings reads it.
  int64_t early_exit_from = kNoEarlyExit;
  // Every token's last hidden state, after the final norm (the rows an embedding pools),
  // into ForwardOutput::hidden. Only the plain Model::forward writes them.
  bool hidden = false;
  // The LoRA adapter its tokens run with (model/lora.h, bound to this model), or null
  // for the base model; chunks of different adapters share a pass.
  const LoraAdapter* adapter = nullptr;
};

struct ForwardOutput {
  std::vector<float> logits;             // [num_rows, n_vocab]
  std::vector<int64_t> first_row;        // per chunk: its first row in `logits` (-1 if none)
  int64_t n_vocab = 0;
  // Per row of logits, with early exit: the blocks run before the head read it
  // (n_layer: all of them). Empty after a pass without early exit.
  std::vector<int32_t> exit_layer;
  // The chunks with SequenceChunk::hidden: their tokens' final-normed hidden states,
  // [num_hidden_rows, n_embd], chunk i's from row first_hidden_row[i] (-1 if none).
  std::vector<float> hidden;
  std::vector<int64_t> first_hidden_row;
  int64_t n_embd = 0;

  const float* row(int64_t r) const { return logits.data() + r * n_vocab; }
  const float* hidden_row(int64_t r) const { return hidden.data() + r * n_embd; }
  // Logits of the last token of chunk i (requires kLast or kAll).
  const float* last_of(size_t chunk, const SequenceChunk& c) const {
    const int64_t r = first_row[chunk] + (c.logits == LogitsWanted::kAll ? static_cast<int64_t>(c.tokens.size()) - 1 : 0);
    return row(r);
  }
};

}  // namespace llms
