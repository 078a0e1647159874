// Helpers for engine tests: a fake model runner whose next token is a pure function
// of (last token, position), and a tokenizer over the synthetic vocabulary.
#pragma once

#include <cstdio>

#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <vector>

#include "engine/engine.h"
#include "io/gguf_file.h"
#include "tools/synthetic.h"
#include "tokenizer/tokenizer.h"

namespace llms::testing {

// AddressSanitizer keeps shadow memory and a quarantine of freed blocks (handing out
// fresh memory, whose pages fault in on first use): tests of the process's memory and
// page faults read the program's own behaviour only without it.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kUnderAsan = true;
#else
inline constexpr bool kUnderAsan = false;
#endif

constexpr int kFakeVocab = 300;

// next(token, pos) = (token * 7 + pos * 3 + 5) % kFakeVocab, never 2 (EOS) unless the
// token is `eos_after`'s trigger: a chunk ending at position eos_at emits EOS.
class FakeRunner : public ModelRunner {
 public:
  static int32_t next(int32_t token, int64_t pos) {
    int32_t t = static_cast<int32_t>((token * 7 + pos * 3 + 5) % kFakeVocab);
    return t == 2 ? 3 : t;
  }
  int vocab_size() const override { return kFakeVocab; }
  Status forward(std::span<const SequenceChunk> chunks, ForwardOutput& out) override {
    calls.emplace_back();
    out.n_vocab = kFakeVocab;
    out.first_row.assign(chunks.size(), -1);
    out.logits.clear();
    int64_t rows = 0;
    for (size_t i = 0; i < chunks.size(); ++i) {
      const auto& c = chunks[i];
      calls.back().push_back(
          {static_cast<int64_t>(c.tokens.size()), c.start_pos, c.logits != LogitsWanted::kNone, c.tokens.front()});
      if (c.logits == LogitsWanted::kNone) continue;
      out.first_row[i] = rows;
      const size_t n = c.tokens.size();
      for (size_t j = c.logits == LogitsWanted::kAll ? 0 : n - 1; j < n; ++j, ++rows) {
        const int64_t pos = c.start_pos + static_cast<int64_t>(j);
        append_row(c.tokens[j], pos, out.logits);
      }
    }
    return ok_status();
  }

  // Logits after `token` at `pos`: a one-hot row of the chain (EOS at eos_at), or with
  // `soft`, a distribution over next() and the three ids after it (logits 2, 1, 0, -1).
  void append_row(int32_t token, int64_t pos, std::vector<float>& logits) const {
    std::vector<float> row(kFakeVocab, soft ? -30.0f : 0.0f);
    const int32_t top = pos == eos_at ? 2 : next(token, pos);
    if (!soft) {
      row[static_cast<size_t>(top)] = 10.0f;
    } else {
      for (int d = 0; d < 4; ++d) row[static_cast<size_t>((top + d) % kFakeVocab)] = 2.0f - static_cast<float>(d);
    }
    logits.insert(logits.end(), row.begin(), row.end());
  }

  struct ChunkInfo {
    int64_t n;
    int64_t start;
    bool logits;
    int32_t first_token;
  };
  std::vector<std::vector<ChunkInfo>> calls;  // per forward call
  int64_t eos_at = -1;
  bool soft = false;
};

// A tokenizer for the synthetic vocabulary, loaded from a small GGUF written once.
inline const Tokenizer& synthetic_tokenizer() {
  static std::unique_ptr<GgufFile> file;
  static std::unique_ptr<Tokenizer> tok;
  if (!tok) {
    SyntheticSpec spec;
    spec.n_vocab = kFakeVocab, spec.n_embd = 8, spec.n_layer = 1, spec.n_head = 2, spec.n_head_kv = 1, spec.n_ff = 8;
    const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_engine_test_vocab.gguf";
    EXPECT_TRUE(write_synthetic_model(spec, path).ok());
    file = std::make_unique<GgufFile>(GgufFile::open(path).value());
    tok = Tokenizer::from_gguf(*file).value();
    std::remove(path.c_str());  // the mapping keeps the data; nothing is left in the temp folder
  }
  return *tok;
}

// Writes the synthetic "tiny" preset with `n_layer` layers and weights from `seed` to
// the test temp folder as `<pid>_<name>.gguf`; returns its path (the caller loads it
// and removes it: a mapping keeps the data).
inline std::string write_tiny_model(int n_layer, uint64_t seed, const std::string& name) {
  SyntheticSpec spec = synthetic_preset("tiny").value();
  spec.n_layer = n_layer;
  spec.seed = seed;
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_" + name + ".gguf";
  EXPECT_TRUE(write_synthetic_model(spec, path).ok());
  return path;
}

// Fake clock the tests advance by hand.
struct ManualClock {
  int64_t ns = 1'000'000'000;
  std::function<int64_t()> fn() {
    return [this] { return ns; };
  }
  void advance_ms(double ms) { ns += static_cast<int64_t>(ms * 1e6); }
};

inline RequestParams greedy_request(std::vector<int32_t> prompt, int max_tokens) {
  RequestParams p;
  p.prompt = std::move(prompt);
  p.max_tokens = max_tokens;
  p.sampling.temperature = 0.0f;
  return p;
}

// Reads every event of a finished request.
struct Collected {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;  // each token's, when the request asked for logprobs
  std::string text;
  FinishEvent finish;
  bool finished = false;
  int finish_count = 0;
};

inline Collected collect(RequestHandle& h) {
  Collected c;
  for (auto& e : h.drain()) {
    if (auto* t = std::get_if<TokenEvent>(&e)) {
      c.tokens.push_back(t->token);
      c.logprobs.push_back(t->logprob);
      c.text += t->text;
    } else {
      c.finish = std::get<FinishEvent>(e);
      c.text += c.finish.text;
      c.finished = true;
      ++c.finish_count;
    }
  }
  return c;
}

// Adds to `into` what `h` has sent since the last call; true once it has finished.
inline bool collect_more(RequestHandle& h, Collected& into) {
  Collected got = collect(h);
  into.tokens.insert(into.tokens.end(), got.tokens.begin(), got.tokens.end());
  into.logprobs.insert(into.logprobs.end(), got.logprobs.begin(), got.logprobs.end());
  into.text += got.text;
  into.finish_count += got.finish_count;
  if (got.finished) {
    into.finish = got.finish;
    into.finished = true;
  }
  return into.finish_count > 0;
}

}  // namespace llms::testing
