#include "eval/early_exit_eval.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/clock.h"
#include "model/early_exit.h"

namespace llms {
namespace {

constexpr int kBlock = 16;
constexpr double kConfident = 0.9;

// log-softmax of a row, in double.
std::vector<double> log_softmax(const float* x, int64_t n) {
  double m = x[0];
  for (int64_t i = 1; i < n; ++i) m = std::max<double>(m, x[i]);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(x[i] - m);
  const double lse = m + std::log(sum);
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = x[i] - lse;
  return out;
}

// KL(p || q) of two rows of logits.
double kl_divergence(const float* p_logits, const float* q_logits, int64_t n) {
  const std::vector<double> lp = log_softmax(p_logits, n), lq = log_softmax(q_logits, n);
  double kl = 0;
  for (size_t i = 0; i < lp.size(); ++i) kl += std::exp(lp[i]) * (lp[i] - lq[i]);
  return std::max(0.0, kl);
}

// One sequence's passes over a cache of its own (positions rewritten by each run).
class Runner {
 public:
  Runner(const Model& m, int max_positions, int threads)
      : m_(m),
        kv_(m.kv_config((max_positions + kBlock - 1) / kBlock, kBlock, DType::kF16, DType::kF16)),
        pool_(threads) {
    for (int32_t b = 0; b < kv_.num_blocks(); ++b) table_.push_back(b);
  }

  // Logits of every position of `tokens` from position `start` (the cache holds the
  // rest), with early exit when `exit` is set (every position may exit).
  const ForwardOutput& pass(std::span<const int32_t> tokens, int64_t start, LogitsWanted wanted,
                            const EarlyExitConfig* exit, ExitTrace* trace = nullptr) {
    SequenceChunk c{tokens, start, table_, wanted, exit ? 0 : kNoEarlyExit};
    state_.set_exit_trace(trace);
    const Status st = exit ? m_.forward({&c, 1}, kv_, state_, pool_, *exit, out_) : m_.forward({&c, 1}, kv_, state_, pool_, out_);
    LLMS_CHECK(st.ok(), st.message());
    state_.set_exit_trace(nullptr);
    return out_;
  }

  // Greedy decoding of `n` tokens after `prompt` (prefilled at full depth); returns the
  // seconds the decode passes took, the tokens in `out_tokens`, exits in `exits`.
  double decode(std::span<const int32_t> prompt, int n, const EarlyExitConfig* exit, std::vector<int32_t>& out_tokens,
                int64_t& exits) {
    ExitTrace lens;  // at threshold 1 the checks still run (their cost is the row's)
    lens.lens = true;
    ExitTrace* trace = exit && !exit->enabled() ? &lens : nullptr;
    const ForwardOutput& first = pass(prompt, 0, LogitsWanted::kLast, nullptr);
    out_tokens.assign(1, head_top(first.row(0), first.n_vocab).token);
    double seconds = 0;
    for (int i = 1; i < n; ++i) {
      const int64_t pos = static_cast<int64_t>(prompt.size()) + i - 1;
      const Stopwatch watch;
      const ForwardOutput& o = pass(std::span<const int32_t>(out_tokens).last(1), pos, LogitsWanted::kLast, exit, trace);
      seconds += watch.elapsed_s();
      if (!o.exit_layer.empty() && o.exit_layer[0] < m_.config().n_layer) ++exits;
      out_tokens.push_back(head_top(o.row(0), o.n_vocab).token);
    }
    return seconds;
  }

 private:
  const Model& m_;
  KvCache kv_;
  ThreadPool pool_;
  ForwardState state_;
  ForwardOutput out_;
  std::vector<int32_t> table_;
};

Status check_options(const Model& model, std::span<const int32_t> tokens, const EarlyExitEvalOptions& o,
                     std::vector<int>& layers) {
  layers = o.layers;
  if (layers.empty()) {
    for (int l = 1; l < model.config().n_layer; ++l) layers.push_back(l);
  }
  if (layers.empty()) return invalid_argument("the model has one layer: there is no layer to exit at");
  EarlyExitConfig c;
  c.layers = layers;
  LLMS_RETURN_IF_ERROR(c.validate(model.config().n_layer));
  if (o.thresholds.empty()) return invalid_argument("--thresholds: give at least one (e.g. 1.0,0.9,0.8)");
  for (double t : o.thresholds) {
    c.threshold = t;
    LLMS_RETURN_IF_ERROR(c.validate(model.config().n_layer));
  }
  if (o.ctx < 2) return invalid_argument(fmt::format("--ctx: {} is below 2", o.ctx));
  if (o.prompt_tokens < 1 || o.prompt_tokens >= o.ctx) {
    return invalid_argument(fmt::format("--prompt-tokens: {} is not in 1..{} (below --ctx)", o.prompt_tokens, o.ctx - 1));
  }
  if (o.decode_tokens < 2) return invalid_argument("--decode-tokens: must be >= 2");
  if (o.decode_prompts < 0) return invalid_argument("--decode-prompts: must be >= 0");
  if (o.threads < 0) return invalid_argument("--threads: must be >= 0");
  for (int32_t t : tokens) {
    if (t < 0 || t >= model.config().n_vocab) return invalid_argument(fmt::format("token id {} is outside the vocabulary", t));
  }
  if (static_cast<int64_t>(tokens.size()) < o.ctx) {
    return invalid_argument(fmt::format("the text has {} tokens; one window of --ctx {} is needed", tokens.size(), o.ctx));
  }
  const int64_t limit = model.config().n_ctx_train;
  if (limit > 0 && std::max<int64_t>(o.ctx, o.prompt_tokens + o.decode_tokens) > limit) {
    return invalid_argument(fmt::format("--ctx or --prompt-tokens + --decode-tokens exceed the model's context of {}", limit));
  }
  return ok_status();
}

}  // namespace

Result<EarlyExitEvalResult> evaluate_early_exit(const Model& model, std::span<const int32_t> tokens,
                                                const EarlyExitEvalOptions& o) {
  EarlyExitEvalResult r;
  LLMS_RETURN_IF_ERROR(check_options(model, tokens, o, r.layers));
  r.n_layer = model.config().n_layer;
  const int64_t vocab = model.config().n_vocab;
  const size_t points = r.layers.size();
  Runner runner(model, std::max(o.ctx, o.prompt_tokens + o.decode_tokens), o.threads);
  const int64_t windows = static_cast<int64_t>(tokens.size()) / o.ctx;

  // Quality: the lens pass (threshold 1, every head read; its logits are full depth's)
  // and one pass per threshold, window by window.
  r.lens.resize(points);
  r.rows.resize(o.thresholds.size());
  std::vector<int64_t> lens_agree(points), confident(points), confident_agree(points);
  std::vector<double> p_sum(points);
  std::vector<std::vector<int64_t>> exits(o.thresholds.size(), std::vector<int64_t>(points));
  std::vector<int64_t> agree(o.thresholds.size()), layers_run(o.thresholds.size());
  std::vector<double> kl(o.thresholds.size());
  std::vector<float> full;
  for (int64_t w = 0; w < windows; ++w) {
    const auto window = tokens.subspan(static_cast<size_t>(w * o.ctx), static_cast<size_t>(o.ctx));
    EarlyExitConfig lens_config;
    lens_config.layers = r.layers;
    ExitTrace lens;
    lens.lens = true;
    const ForwardOutput& f = runner.pass(window, 0, LogitsWanted::kAll, &lens_config, &lens);
    full = f.logits;
    std::vector<int32_t> final_top(static_cast<size_t>(o.ctx));
    for (int64_t t = 0; t < o.ctx; ++t) {
      final_top[static_cast<size_t>(t)] = head_top(full.data() + t * vocab, vocab).token;
      for (size_t i = 0; i < points; ++i) {
        const size_t at = static_cast<size_t>(t) * points + i;
        const bool same = lens.lens_top[at] == final_top[static_cast<size_t>(t)];
        lens_agree[i] += same;
        p_sum[i] += lens.lens_p[at];
        if (lens.lens_p[at] >= kConfident) ++confident[i], confident_agree[i] += same;
        if (lens.lens_p[at] == 1.0f) ++r.lens[i].certain, r.lens[i].certain_wrong += !same;
      }
    }
    for (size_t k = 0; k < o.thresholds.size(); ++k) {
      EarlyExitConfig c;
      c.layers = r.layers;
      c.threshold = o.thresholds[k];
      const ForwardOutput& e = runner.pass(window, 0, LogitsWanted::kAll, &c);
      for (int64_t t = 0; t < o.ctx; ++t) {
        const int32_t layer = e.exit_layer[static_cast<size_t>(t)];
        layers_run[k] += layer;
        const auto it = std::find(r.layers.begin(), r.layers.end(), layer);
        if (it != r.layers.end()) ++exits[k][static_cast<size_t>(it - r.layers.begin())];
        agree[k] += head_top(e.row(t), vocab).token == final_top[static_cast<size_t>(t)];
        kl[k] += kl_divergence(full.data() + t * vocab, e.row(t), vocab);
      }
    }
  }
  r.positions = windows * o.ctx;
  const double n = static_cast<double>(r.positions);
  for (size_t i = 0; i < points; ++i) {
    LensRow& row = r.lens[i];
    row.layer = r.layers[i];
    row.top1_agreement = static_cast<double>(lens_agree[i]) / n;
    row.mean_top_p = p_sum[i] / n;
    row.confident_share = static_cast<double>(confident[i]) / n;
    row.confident_agreement = confident[i] ? static_cast<double>(confident_agree[i]) / static_cast<double>(confident[i]) : 0;
  }
  for (size_t k = 0; k < o.thresholds.size(); ++k) {
    ThresholdRow& row = r.rows[k];
    row.threshold = o.thresholds[k];
    int64_t exited = 0;
    for (size_t i = 0; i < points; ++i) {
      row.exit_share.push_back(static_cast<double>(exits[k][i]) / n);
      exited += exits[k][i];
    }
    row.full_share = 1.0 - static_cast<double>(exited) / n;
    row.mean_layers = static_cast<double>(layers_run[k]) / n;
    row.top1_agreement = static_cast<double>(agree[k]) / n;
    row.kl = kl[k] / n;
  }

  // Speed: per prompt and threshold, full depth then early exit, timed pass by pass.
  const int64_t prompts = std::min<int64_t>(o.decode_prompts, windows);
  for (size_t k = 0; k < o.thresholds.size() && prompts > 0; ++k) {
    ThresholdRow& row = r.rows[k];
    EarlyExitConfig c;
    c.layers = r.layers;
    c.threshold = o.thresholds[k];
    double full_s = 0, exit_s = 0, match = 0;
    int64_t exits_n = 0, unused = 0;
    std::vector<int32_t> full_tokens, exit_tokens;
    for (int64_t p = 0; p < prompts; ++p) {
      const auto prompt = tokens.subspan(static_cast<size_t>(p * o.ctx), static_cast<size_t>(o.prompt_tokens));
      full_s += runner.decode(prompt, o.decode_tokens, nullptr, full_tokens, unused);
      exit_s += runner.decode(prompt, o.decode_tokens, &c, exit_tokens, exits_n);
      size_t same = 0;
      while (same < full_tokens.size() && full_tokens[same] == exit_tokens[same]) ++same;
      match += static_cast<double>(same) / static_cast<double>(full_tokens.size());
    }
    const double passes = static_cast<double>(prompts * (o.decode_tokens - 1));
    row.full_tok_s = passes / full_s;
    row.exit_tok_s = passes / exit_s;
    row.speedup = row.exit_tok_s / row.full_tok_s;
    row.decode_exit_share = static_cast<double>(exits_n) / passes;
    row.decode_match = match / static_cast<double>(prompts);
  }
  return r;
}

}  // namespace llms
