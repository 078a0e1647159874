// What a step's outputs become: the next tokens (plain draws on the runner's threads,
// draws under a grammar one by one), the token event handed to its client (text
// through the detokenizer and the stop matcher, logprobs), and the end of a sequence
// (its finish event, metrics, KV blocks released, result cache filled). Engine-thread
// only, like the rest of the step.
#include <algorithm>

#include "base/clock.h"
#include "engine/engine.h"
#include "model/lora.h"
#include "engine/output_check.h"
#include "engine/slo.h"

namespace llms {

int32_t Engine::sample_next(Sequence& s, const float*& logits) {
  const int n_vocab = runner_->vocab_size();
  if (!s.matcher) return s.sampler->sample(logits, n_vocab);
  if (!constrain_logits(*s.matcher, std::span<const float>(logits, static_cast<size_t>(n_vocab)), s.params.ignore_eos,
                        &token_mask_, &constrained_logits_)) {
    // The request's own grammar: past its mask budget, or no token of this vocabulary fits.
    end_for_grammar(s, "grammar_dead_end", "the grammar allows no token of this vocabulary here");
    return -1;
  }
  logits = constrained_logits_.data();  // logprobs are those of the constrained distribution
  return s.sampler->sample(logits, n_vocab);
}

void Engine::end_for_grammar(Sequence& s, std::string code, std::string message) {
  if (s.matcher->failed()) {
    code = "grammar_budget_exceeded";
    message = "the grammar: " + s.matcher->failure();
  }
  s.client_error_code = std::move(code);
  finish(s, FinishReason::kError, std::move(message));
}

// The tokens of the chunks that end in a plain draw (logits wanted, no proposals to
// verify, no grammar), drawn on the runner's threads: each sequence's sampler is its
// own, so the draws are those sample_next() would make one after another.
void Engine::draw_ahead(const SchedulePlan& plan) {
  draws_.assign(plan.chunks.size(), -1);
  to_draw_.clear();
  for (size_t i = 0; i < plan.chunks.size(); ++i) {
    if (plan.chunks[i].n_draft == 0 && chunks_[i].logits != LogitsWanted::kNone && !plan.chunks[i].seq->matcher) {
      to_draw_.push_back(static_cast<int64_t>(i));
    }
  }
  if (to_draw_.size() < 2) return;
  const ScopedStepPart part(&profile_, StepPart::kSampling);
  const int n_vocab = runner_->vocab_size();
  runner_->for_each(static_cast<int64_t>(to_draw_.size()), [&](int64_t k) {
    const size_t i = static_cast<size_t>(to_draw_[static_cast<size_t>(k)]);
    draws_[i] = plan.chunks[i].seq->sampler->sample(fwd_.last_of(i, chunks_[i]), n_vocab);
  });
}

void Engine::score_prompt(Sequence& s, size_t chunk) {
  const ScopedStepPart part(&profile_, StepPart::kSampling);
  const int n_vocab = runner_->vocab_size();
  s.prompt_scores.resize(static_cast<size_t>(s.prompt_len - 1));
  const SequenceChunk& ch = chunks_[chunk];
  for (size_t j = 0; j < ch.tokens.size(); ++j) {
    const int64_t next = ch.start_pos + static_cast<int64_t>(j) + 1;  // the position row j predicts
    if (next >= s.prompt_len) break;
    const float* logits = fwd_.row(fwd_.first_row[chunk] + static_cast<int64_t>(j));
    TokenEvent& ev = s.prompt_scores[static_cast<size_t>(next - 1)];
    ev.token = s.tokens[static_cast<size_t>(next)];
    ev.logprob = Sampler::logprob_of(logits, n_vocab, ev.token).logprob;
    if (s.params.top_logprobs > 0) ev.top = Sampler::top_logprobs(logits, n_vocab, s.params.top_logprobs);
  }
}

void Engine::pool_hidden(Sequence& s, size_t chunk) {
  const SequenceChunk& ch = chunks_[chunk];
  const int64_t d = fwd_.n_embd, n = static_cast<int64_t>(ch.tokens.size());
  const float* rows = fwd_.hidden_row(fwd_.first_hidden_row[chunk]);  // [n, n_embd]
  if (ch.start_pos == 0) s.pooled.assign(static_cast<size_t>(d), 0.0f);  // the first chunk (again after a preemption)
  switch (s.params.pooling) {
    case Pooling::kMean:
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t e = 0; e < d; ++e) s.pooled[static_cast<size_t>(e)] += rows[j * d + e];
      }
      if (ch.start_pos + n == s.prompt_len) {
        for (float& v : s.pooled) v /= static_cast<float>(s.prompt_len);
      }
      break;
    case Pooling::kCls:
      if (ch.start_pos == 0) std::copy(rows, rows + d, s.pooled.begin());
      break;
    case Pooling::kLast:
      if (ch.start_pos + n == s.prompt_len) std::copy(rows + (n - 1) * d, rows + n * d, s.pooled.begin());
      break;
    case Pooling::kNone:
      break;
  }
}

void Engine::on_token(Sequence& s, int32_t token, const float* logits, int64_t now) {
  s.sampler->accept(token);
  s.tokens.push_back(token);
  if (s.first_token_ns == 0) {
    s.first_token_ns = now;
    metrics_.ttft.observe(static_cast<double>(now - s.arrival_ns) * 1e-9);
  } else {
    metrics_.itl.observe(static_cast<double>(now - s.last_token_ns) * 1e-9);
    note_itl(s, now - s.last_token_ns);
  }
  s.last_token_ns = now;
  metrics_.generation_tokens.inc();
  // The mask allowed the token, so the matcher takes it.
  if (s.matcher && !s.matcher->accept_token(token)) {
    // Refused for ambiguity (the mask cannot see it) is the grammar's doing; otherwise a bug.
    end_for_grammar(s, "", "internal error: the grammar refused a token its mask allowed");
    return;
  }
  if (s.matcher && s.matcher->terminated()) {  // an end-of-generation token where the grammar may end
    finish(s, FinishReason::kStop);
    return;
  }
  if (!s.params.ignore_eos && tokenizer_.is_end_of_generation(token)) {
    finish(s, FinishReason::kStop);
    return;
  }
  TokenEvent ev;
  ev.token = token;
  std::optional<ScopedStepPart> part(std::in_place, &profile_, StepPart::kDetokenize);
  ev.text = s.stop->push(s.decoder->push(token));
  part.reset();
  if (s.params.top_logprobs >= 0) {
    const ScopedStepPart logprobs(&profile_, StepPart::kSampling);
    ev.logprob = Sampler::logprob_of(logits, runner_->vocab_size(), token).logprob;
    if (s.params.top_logprobs > 0) ev.top = Sampler::top_logprobs(logits, runner_->vocab_size(), s.params.top_logprobs);
  }
  if (s.params.report_entropy) {
    const ScopedStepPart entropy(&profile_, StepPart::kSampling);
    ev.entropy = static_cast<float>(Sampler::entropy(logits, runner_->vocab_size()));
  }
  part.emplace(&profile_, StepPart::kDetokenize);
  if (auto it = replay_.find(s.id); it != replay_.end()) it->second.push_back(ev);
  s.text += ev.text;
  s.handle->push(std::move(ev));
  part.reset();
  if (s.stop->stopped() || (s.matcher && s.matcher->finished())) {
    finish(s, FinishReason::kStop);
  } else if (s.generated() >= s.params.max_tokens || static_cast<int64_t>(s.tokens.size()) >= context_length_) {
    finish(s, FinishReason::kLength);
  }
}

void Engine::finish(Sequence& s, FinishReason reason, const std::string& message, double retry_after_s) {
  const int64_t now = clock_();
  FinishEvent fe;
  fe.reason = reason;
  fe.message = message;
  fe.retry_after_s = retry_after_s;
  fe.client_error_code = std::move(s.client_error_code);
  if (!s.stop->stopped()) fe.text = s.stop->push(s.decoder->flush()) + s.stop->finish();
  fe.prompt_tokens = s.prompt_len;
  fe.completion_tokens = s.generated();
  fe.cached_prompt_tokens = s.cached_prompt_tokens;
  fe.preemptions = s.preemptions;
  fe.prompt_logprobs = std::move(s.prompt_scores);
  if (s.params.pooling != Pooling::kNone && s.computed >= s.prompt_len) fe.embedding = std::move(s.pooled);
  fe.timings.queue_s = s.first_scheduled_ns ? static_cast<double>(s.first_scheduled_ns - s.arrival_ns) * 1e-9 : 0;
  fe.timings.ttft_s = s.first_token_ns ? static_cast<double>(s.first_token_ns - s.arrival_ns) * 1e-9 : 0;
  fe.timings.e2e_s = static_cast<double>(now - s.arrival_ns) * 1e-9;
  fe.timings.compute_s = s.compute_s;
  const SloOutcome slo = slo_outcome(s, config_.slo.percentile);
  fe.has_slo = slo.any();
  fe.slo_met = slo.all_met();

  if (s.first_scheduled_ns == 0) admission_.release_waiting(s.prompt_len);  // ended while still queued
  s.text += fe.text;
  const OutputFacts facts{std::span<const int32_t>(s.tokens).subspan(static_cast<size_t>(s.prompt_len)), s.text, reason,
                          s.params.ignore_eos};
  const std::vector<const char*> abnormal = abnormal_output_kinds(facts);
  for (const char* kind : abnormal) metrics_.abnormal_outputs.with({kind}).inc();
  kv_.release(s.blocks);
  std::erase(waiting_, &s);
  std::erase(running_, &s);
  metrics_.finished.with({finish_reason_name(reason)}).inc();
  if (slo.any()) {
    if (slo.has_ttft) metrics_.slo_requests.with({"ttft", slo.ttft_met ? "met" : "missed"}).inc();
    if (slo.has_itl) metrics_.slo_requests.with({"itl", slo.itl_met ? "met" : "missed"}).inc();
    if (slo.all_met()) metrics_.slo_goodput_tokens.inc(static_cast<double>(s.generated()));
  }
  if (reason == FinishReason::kTimeout) metrics_.timeouts.inc();
  metrics_.prompt_tokens.inc(static_cast<double>(s.prompt_len));
  if (s.params.adapter) {
    const std::vector<std::string> adapter{s.params.adapter->name()};
    metrics_.lora_requests.with(adapter).inc();
    metrics_.lora_prompt_tokens.with(adapter).inc(static_cast<double>(s.prompt_len));
    metrics_.lora_generation_tokens.with(adapter).inc(static_cast<double>(s.generated()));
  }
  metrics_.e2e.observe(fe.timings.e2e_s);
  if (s.long_job) metrics_.long_job_e2e.observe(fe.timings.e2e_s);
  metrics_.compute_time.observe(fe.timings.compute_s);
  if (auto it = replay_.find(s.id); it != replay_.end()) {
    if ((reason == FinishReason::kStop || reason == FinishReason::kLength) && result_cache_.max_bytes() > 0) {
      if (const auto key = result_key(s.params)) {
        result_cache_.insert(*key, CachedCompletion{std::move(it->second), fe});
      }
    }
    replay_.erase(it);
  }
  status_.note_finish(now, reason, !abnormal.empty());
  for (auto& o : observers_) o->on_finish(s, fe);
  if (proposer_) proposer_->forget(s.id);
  s.handle->push(std::move(fe));
  sequences_.erase(s.id);
}

}  // namespace llms
