#include "grammar/compiled_grammar.h"

#include <fmt/format.h>

#include <bit>

#include "base/clock.h"
#include "grammar/grammar_stepper.h"
#include "grammar/rule_returns.h"

namespace llms {

CompiledGrammar::CompiledGrammar(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenVocabulary> v)
    : grammar_(std::move(g)), vocab_(std::move(v)) {}

CompiledGrammar::~CompiledGrammar() = default;

Result<std::shared_ptr<const CompiledGrammar>> CompiledGrammar::compile(std::shared_ptr<const Grammar> grammar,
                                                                        std::shared_ptr<const TokenVocabulary> vocab,
                                                                        const GrammarBudget& budget) {
  if (!grammar || !vocab) return invalid_argument("compile: no grammar or no vocabulary");
  const Stopwatch watch;
  WorkMeter meter(budget.compile_work, budget.compile_seconds, budget.cancel);
  std::shared_ptr<CompiledGrammar> cg(new CompiledGrammar(std::move(grammar), std::move(vocab)));
  cg->budget_ = budget;
  cg->budget_.cancel = nullptr;  // the flag belongs to this compile's caller
  cg->lay_out_points();
  meter.charge(cg->grammar_->num_elements());
  LLMS_ASSIGN_OR_RETURN(RuleReturns returns, RuleReturns::of(*cg->grammar_, budget.max_return_points, meter));
  cg->stats_.return_points = returns.total_points();
  cg->pre_ = std::make_unique<PointClassifier>(*cg->grammar_, *cg->vocab_, std::move(returns));
  LLMS_RETURN_IF_ERROR(cg->classify_start(meter));
  cg->stats_.compile_work = meter.used();
  cg->stats_.seconds = watch.elapsed_s();
  return std::shared_ptr<const CompiledGrammar>(std::move(cg));
}

void CompiledGrammar::lay_out_points() {
  const Grammar& g = *grammar_;
  first_point_.assign(static_cast<size_t>(g.num_elements()), -1);
  for (int32_t i = 0; i < g.num_elements(); ++i) {
    const Element& e = g.element(i);
    if (e.kind != ElementKind::kBytes && e.kind != ElementKind::kChars) continue;
    first_point_[static_cast<size_t>(i)] = static_cast<int32_t>(point_ids_.size());
    const int n = e.kind == ElementKind::kBytes ? 1 : g.char_class(e.value).num_states();
    for (int s = 0; s < n; ++s) point_ids_.push_back(make_point(i, s));
  }
  const size_t n = point_ids_.size();
  points_.resize(n);
  ready_ = std::make_unique<std::atomic<bool>[]>(n);
  for (size_t i = 0; i < n; ++i) ready_[i].store(false, std::memory_order_relaxed);
  stats_.num_points = static_cast<int32_t>(n);
}

// The start state's points: every matcher meets them first, so they are classified
// here, under the compile budget, rather than on the engine thread. (No other thread
// sees the grammar yet.)
Status CompiledGrammar::classify_start(WorkMeter& meter) {
  StackPool pool;
  GrammarStepper stepper(*grammar_, pool);
  stepper.set_meter(&meter);
  MatchState start;
  stepper.start(StackPool::kRoot, &start);
  if (start.overflow && !meter.stopped()) {
    return resource_exhausted(fmt::format(
        "the grammar is too ambiguous: its first character can be reached in more than {} ways (nested optional "
        "repetitions?)",
        GrammarStepper::kMaxStacks));
  }
  for (const int32_t top : start.tops) {
    if (meter.stopped()) break;
    const int32_t point = pool.node(top).point;
    const size_t i = index_of(point);
    if (ready_[i].load(std::memory_order_relaxed)) continue;
    const Stopwatch watch;
    PointTokens t;
    if (!pre_->classify(point, meter, &t)) break;
    store(i, std::move(t), watch.elapsed_s());
  }
  return meter.stopped() ? compile_stop_status(meter) : ok_status();
}

const PointTokens& CompiledGrammar::classify(size_t index, WorkMeter* charge_to) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (ready_[index].load(std::memory_order_relaxed)) return points_[index];
  const Stopwatch watch;
  WorkMeter meter(budget_.point_work, budget_.point_seconds);
  PointTokens t;
  if (!pre_->classify(point_ids_[index], meter, &t)) {
    t = PointTokens{};
    t.check_all = true;
    ++stats_.num_unclassified;
  }
  stats_.classify_work += meter.used();
  if (charge_to != nullptr) charge_to->charge(meter.used());
  return store(index, std::move(t), watch.elapsed_s());
}

const PointTokens& CompiledGrammar::store(size_t index, PointTokens t, double seconds) const {
  PointTokens& slot = points_[index];
  slot = std::move(t);
  stats_.num_uncertain += static_cast<int64_t>(slot.uncertain_ranks.size());
  if (slot.accepted_bits.empty()) {
    stats_.num_accepted += static_cast<int64_t>(slot.accepted.size());
  } else {
    for (const uint32_t w : slot.accepted_bits) stats_.num_accepted += std::popcount(w);
  }
  ++stats_.num_classified;
  stats_.num_states = pre_->states_met();
  stats_.classify_seconds += seconds;
  ready_[index].store(true, std::memory_order_release);
  return slot;
}

void CompiledGrammar::classify_all() const {
  for (size_t i = 0; i < point_ids_.size(); ++i) {
    if (!ready_[i].load(std::memory_order_acquire)) classify(i, nullptr);
  }
}

CompileStats CompiledGrammar::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace llms
