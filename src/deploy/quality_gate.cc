#include "deploy/quality_gate.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

namespace llms {
namespace {

constexpr uint64_t kSampleSeed = 20261201;

// A sample of `n` tokens from `v`, seeded, continuing a BOS (or a one-word prompt).
Result<std::vector<int32_t>> sample_text(ServingVersion& v, int n) {
  const Tokenizer& tok = v.tokenizer();
  EncodeOptions enc;
  enc.add_bos = true;
  std::vector<int32_t> prompt = tok.bos_id() >= 0 ? std::vector<int32_t>{tok.bos_id()} : tok.encode("The", enc);
  if (prompt.empty()) return failed_precondition("cannot make a prompt for the gate sample");
  RequestParams p;
  p.prompt = prompt;
  p.max_tokens = std::max(1, std::min(n, v.engine().context_length() - static_cast<int>(prompt.size())));
  p.sampling.temperature = 1.0f;
  p.sampling.seed = kSampleSeed;
  p.ignore_eos = true;
  p.lane = Lane::kBatch;
  LLMS_ASSIGN_OR_RETURN(auto handle, v.engine().submit(p));
  std::vector<int32_t> tokens = prompt;
  for (RequestEvent ev;;) {
    if (!handle->next(&ev, 600'000)) return unavailable("the gate sample did not finish");
    if (const auto* t = std::get_if<TokenEvent>(&ev)) {
      tokens.push_back(t->token);
      continue;
    }
    const auto& f = std::get<FinishEvent>(ev);
    if (f.reason != FinishReason::kLength && f.reason != FinishReason::kStop) {
      return unavailable(fmt::format("the gate sample ended {}: {}", finish_reason_name(f.reason), f.message));
    }
    return tokens;
  }
}

}  // namespace

Status check_same_tokenizer(const Tokenizer& a, const Tokenizer& b) {
  if (a.vocab_size() != b.vocab_size()) {
    return failed_precondition(fmt::format("the vocabulary changed: {} tokens serving, {} in the candidate",
                                           a.vocab_size(), b.vocab_size()));
  }
  for (int32_t id = 0; id < a.vocab_size(); ++id) {
    if (a.token_text(id) != b.token_text(id)) {
      return failed_precondition(fmt::format("the vocabulary changed: token {} is '{}' serving, '{}' in the candidate",
                                             id, a.token_text(id), b.token_text(id)));
    }
  }
  if (a.bos_id() != b.bos_id() || a.eos_id() != b.eos_id() || a.eot_id() != b.eot_id() || a.add_bos() != b.add_bos()) {
    return failed_precondition("the special tokens changed (BOS, EOS, EOT or add_bos)");
  }
  if (a.pre_tokenizer_name() != b.pre_tokenizer_name()) {
    return failed_precondition(fmt::format("the pre-tokenizer changed: '{}' serving, '{}' in the candidate",
                                           a.pre_tokenizer_name(), b.pre_tokenizer_name()));
  }
  return ok_status();
}

Result<std::vector<int32_t>> gate_tokens(ServingVersion& serving, const GateConfig& config) {
  if (config.text_path.empty()) return sample_text(serving, config.sample_tokens);
  std::ifstream in(config.text_path);
  if (!in) return not_found(fmt::format("cannot read the gate text {}", config.text_path));
  std::stringstream ss;
  ss << in.rdbuf();
  EncodeOptions enc;
  enc.add_bos = serving.tokenizer().add_bos();
  std::vector<int32_t> tokens = serving.tokenizer().encode(ss.str(), enc);
  if (tokens.size() < 2) return invalid_argument(fmt::format("the gate text {} has fewer than 2 tokens", config.text_path));
  return tokens;
}

Result<GateResult> run_gate(const ServingVersion& serving, const ServingVersion& candidate,
                            const std::vector<int32_t>& tokens, const GateConfig& config, ThreadPool& pool) {
  PerplexityOptions opts;
  opts.ctx = config.ctx;
  LLMS_ASSIGN_OR_RETURN(const PerplexityResult r,
                        evaluate_perplexity(tokens, {&candidate.model(), candidate.k_type(), candidate.v_type()},
                                            {&serving.model(), serving.k_type(), serving.v_type()}, opts, pool));
  return gate_verdict(r, candidate, config, serving.name());
}

Result<GateResult> run_gate_against(const ReferenceLogprobs& serving_ref, const std::string& serving_name,
                                    const ServingVersion& candidate, const GateConfig& config, ThreadPool& pool) {
  LLMS_ASSIGN_OR_RETURN(const PerplexityResult r,
                        evaluate_against(serving_ref, {&candidate.model(), candidate.k_type(), candidate.v_type()}, pool));
  return gate_verdict(r, candidate, config, serving_name);
}

GateResult gate_verdict(const PerplexityResult& r, const ServingVersion& candidate, const GateConfig& config,
                        const std::string& against) {
  const double max_kl = candidate.meta().gate_max_kl.value_or(config.max_kl);
  const double min_top1 = candidate.meta().gate_min_top1.value_or(config.min_top1);
  GateResult g;
  g.ran = true;
  g.kl = r.kl_divergence;
  g.top1 = r.top1_agreement;
  g.ppl_ratio = r.base_perplexity > 0 ? r.perplexity / r.base_perplexity : 0;
  g.tokens = r.scored_tokens;
  const std::string numbers = fmt::format("KL {:.5f} (max {}), top-1 agreement {:.4f} (min {}), perplexity ratio {:.4f} "
                                          "over {} tokens against {}",
                                          g.kl, max_kl, g.top1, min_top1, g.ppl_ratio, g.tokens, against);
  // NaN compares false: a candidate that produces NaN fails.
  g.passed = g.kl <= max_kl && g.top1 >= min_top1;
  g.reason = (g.passed ? "passed: " : "refused by the quality gate: ") + numbers;
  return g;
}

}  // namespace llms
