#include "llama_reference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace llms::test {

Reference read_reference(const std::string& path) {
  Reference ref;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string kind;
    words >> kind;
    if (kind == "model") {
      std::getline(words, ref.make_model_args);
    } else if (kind == "lora") {
      std::getline(words, ref.lora_args);
    } else if (kind == "context") {
      words >> ref.context;
    } else if (kind == "prompt") {
      ref.prompts.emplace_back();
      for (int32_t t; words >> t;) ref.prompts.back().tokens.push_back(t);
    } else if (kind == "step") {
      RefStep s;
      words >> s.greedy;
      for (std::string pair; words >> pair;) {
        const size_t colon = pair.find(':');
        s.top.emplace_back(std::stoi(pair.substr(0, colon)), std::stod(pair.substr(colon + 1)));
      }
      ref.prompts.back().steps.push_back(std::move(s));
    }
  }
  return ref;
}

std::vector<double> log_probs(const float* logits, int64_t n) {
  const double mx = *std::max_element(logits, logits + n);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(logits[i] - mx);
  std::vector<double> lp(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) lp[i] = logits[i] - mx - std::log(sum);
  return lp;
}

Agreement compare_prompt(const Model& m, const RefPrompt& p, int context, const Tokenizer& tok, double tie_margin,
                         const LoraAdapter* adapter) {
  const ModelConfig& c = m.config();
  const int block = 16;
  const int64_t total = static_cast<int64_t>(p.tokens.size() + p.steps.size());
  const int32_t n_blocks = static_cast<int32_t>((total + block - 1) / block);
  KvCache kv(m.kv_config(n_blocks, block, DType::kF32, DType::kF32));
  std::vector<int32_t> table;
  for (int32_t b = n_blocks - 1; b >= 0; --b) table.push_back(b);  // scattered on purpose
  ForwardState state;
  state.set_context_length(context);
  ThreadPool pool(2);
  ForwardOutput out;
  std::vector<int32_t> tokens = p.tokens;
  int64_t done = 0;
  Agreement a;
  for (const RefStep& step : p.steps) {
    SequenceChunk chunk{std::span<const int32_t>(tokens).subspan(static_cast<size_t>(done)), done, table,
                        LogitsWanted::kLast};
    chunk.adapter = adapter;
    EXPECT_TRUE(m.forward({&chunk, 1}, kv, state, pool, out).ok());
    done = static_cast<int64_t>(tokens.size());
    const std::vector<double> lp = log_probs(out.row(0), c.n_vocab);
    // llama.cpp's greedy choice had end-of-generation tokens (ignore_eos) and byte
    // tokens (a logit bias, see the script) banned.
    int32_t best = -1;
    for (int32_t i = 0; i < c.n_vocab; ++i) {
      if (tok.is_end_of_generation(i) || tok.token_type(i) == TokenType::kByte) continue;
      if (best < 0 || lp[i] > lp[best]) best = i;
    }
    if (best != step.greedy) {
      // Our choice must be llama.cpp's runner-up among the tokens its greedy choice could
      // take (its top-k with the banned ones left out), within the margin of its winner.
      std::vector<std::pair<int32_t, double>> allowed;
      for (const auto& t : step.top) {
        if (!tok.is_end_of_generation(t.first) && tok.token_type(t.first) != TokenType::kByte) allowed.push_back(t);
      }
      const bool tie = allowed.size() > 1 && allowed[0].first == step.greedy && allowed[1].first == best &&
                       allowed[0].second - allowed[1].second <= tie_margin;
      ++(tie ? a.near_ties : a.greedy_mismatches);
    }
    for (const auto& [id, want] : step.top) a.worst_logprob_diff = std::max(a.worst_logprob_diff, std::abs(lp[id] - want));
    tokens.push_back(step.greedy);
  }
  return a;
}

}  // namespace llms::test
