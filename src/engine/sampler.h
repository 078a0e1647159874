// Sampler: turns a row of logits into the next token for one sequence, applying the
// OpenAI/vLLM sampling parameters in a fixed order:
//   repetition penalty (prompt + output) -> presence/frequency penalties (output)
//   -> logit bias -> greedy if temperature == 0, else temperature -> top-k -> top-p -> min-p -> draw.
// Each sequence owns its Sampler (and so its RNG): the same seed gives the same
// tokens whatever else runs in the batch. Not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/random.h"
#include "base/status.h"

namespace llms {

// The index std::max_element(x, x + n) gives (the first maximum; a NaN only when x[0]
// is one), computed without a chain of dependent compares: greedy decoding's argmax.
int32_t first_max_index(const float* x, int n);

// A request value the engine refuses: the parameter at fault, by its API name
// ("temperature", "logit_bias", "prompt", ...), and why.
struct ParamError {
  std::string param;
  std::string message;
  bool context_exceeded = false;  // the prompt leaves no room in the context (OpenAI's context_length_exceeded)
};

inline constexpr int kMaxTopK = 1 << 20;

struct SamplingParams {
  float temperature = 1.0f;         // 0 = greedy
  int top_k = 0;                    // 0 = off
  float top_p = 1.0f;               // 1 = off
  float min_p = 0.0f;               // 0 = off
  float repetition_penalty = 1.0f;  // 1 = off; > 1 discourages repeats (prompt + output)
  float presence_penalty = 0.0f;    // OpenAI semantics, over output tokens
  float frequency_penalty = 0.0f;
  std::optional<uint64_t> seed;     // none: a random seed per request
  // Added to the logits of these token ids (OpenAI logit_bias, -100..100).
  std::vector<std::pair<int32_t, float>> logit_bias;

  bool greedy() const { return temperature == 0.0f; }
  // Deterministic output: greedy, or sampled with a fixed seed.
  bool deterministic() const { return greedy() || seed.has_value(); }
  // The rule for sampling values, OpenAI's ranges where OpenAI has one: temperature
  // 0..2, top_p (0, 1], top_k 0..kMaxTopK, min_p 0..1, presence and frequency
  // penalties -2..2, repetition_penalty 0.01..10, logit_bias ids >= 0 (and below
  // `vocab_size` when it is known: > 0) with biases -100..100. The first value out of
  // range, or none. The server applies it when it parses a request (and with the
  // vocabulary once the model is known), the engine at submit.
  std::optional<ParamError> check(int vocab_size = 0) const;
  // check() as INVALID_ARGUMENT (the message names the parameter and its range).
  Status validate() const;
};

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;
};

class Sampler {
 public:
  // `seed` is used when params.seed is empty.
  Sampler(const SamplingParams& params, uint64_t seed, std::span<const int32_t> prompt);

  // Picks the next token from logits [n_vocab]; the caller then reports it with accept().
  int32_t sample(const float* logits, int n_vocab);
  void accept(int32_t token);

  // Log-softmax of the raw logits: the chosen token's logprob and the top n.
  static TokenLogprob logprob_of(const float* logits, int n_vocab, int32_t token);
  static std::vector<TokenLogprob> top_logprobs(const float* logits, int n_vocab, int n);
  // Shannon entropy of softmax(logits) in nats.
  static double entropy(const float* logits, int n_vocab);

 private:
  void apply_penalties(std::vector<float>& logits) const;
  // Top-p's last kept token (without top-k): tokens whose exponential's fine key is
  // above `key` are kept, and those at it up to `last` in order of logit.
  struct NucleusBound {
    uint32_t key = 0;
    std::pair<float, int32_t> last;
  };
  NucleusBound nucleus_bound(const float* logits, int n_vocab, float inv_t, double sum);

  SamplingParams params_;
  Rng rng_;
  std::unordered_map<int32_t, int> output_counts_;
  std::unordered_map<int32_t, int> seen_;  // prompt + output, for the repetition penalty
  std::vector<std::pair<float, int32_t>> candidates_;  // scratch
  std::vector<float> scratch_;
  std::vector<float> probs_;  // scratch: exponentials of the scaled logits, by token
  std::vector<double> mass_;  // scratch: their sum by key (nucleus_bound)
  std::vector<double> block_mass_;  // scratch: the kept tokens' sum by block of tokens (sample)
};

}  // namespace llms
