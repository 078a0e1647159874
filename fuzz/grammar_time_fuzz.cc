// libFuzzer target: the grammar time fuzzer. Every input must be parsed and
// compiled, or refused, within the budget (grammar_budget.h); a grammar that
// compiles then has its points classified and a few masks made, each within its own
// limit. Input as grammar_fuzz (grammar_inputs.h), with the server's size limits
// (GrammarLimits' defaults) and the stories260K vocabulary.
//
// The budget below is tight in work units, so that most inputs stop on work; its
// wall-time limits are the backstop. A step that runs past its wall-time limit by
// more than kSlackSeconds did work the meter does not count (the meter looks at the
// clock on every charge) — a broken property. Parsing runs under the compile budget
// as the server runs it (GrammarLimits::meter), and the compile gets what it left:
// together they must end within compile_seconds. libFuzzer's -timeout catches what
// never returns.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/clock.h"
#include "fuzz_util.h"
#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar_inputs.h"

namespace llms::fuzz {
namespace {

constexpr double kSlackSeconds = 1.0;  // sanitizers, a loaded machine
constexpr size_t kMaxPoints = 64;      // points classified per input, spread over the grammar
constexpr int kMaxSteps = 16;          // masks made along a walk

GrammarBudget budget() {
  GrammarBudget b;
  b.compile_work = 4'000'000;
  b.compile_seconds = 2.0;
  b.point_work = 500'000;
  b.point_seconds = 1.0;
  b.mask_work = 1'000'000;
  b.mask_seconds = 1.0;
  return b;
}

std::shared_ptr<const TokenVocabulary> vocab() {
  static const auto v = std::make_shared<const TokenVocabulary>(TokenVocabulary::from_tokenizer(stories_tokenizer()));
  return v;
}

void check_time(const Stopwatch& watch, double limit, const char* what) {
  const double s = watch.elapsed_s();
  if (s > limit + kSlackSeconds) fail(fmt::format("{} took {:.2f} s, past its limit of {:.2f} s", what, s, limit));
}

// Classifies up to kMaxPoints points (all of a small grammar), each within the
// point limit (a classification may also stop on its own work: check_all).
void classify_points(const CompiledGrammar& cg) {
  const std::vector<int32_t> points = cg.grammar().terminal_points();
  const size_t stride = std::max<size_t>(1, points.size() / kMaxPoints);
  for (size_t i = 0; i < points.size(); i += stride) {
    const Stopwatch watch;
    cg.tokens_at(points[i]);
    check_time(watch, cg.budget().point_seconds, "classifying a point");
  }
}

// A walk whose tokens the drive bytes pick among the allowed ones. A mask may also
// classify one point past its own limit before it stops.
void walk(const std::shared_ptr<const CompiledGrammar>& cg, std::string_view drive) {
  GrammarMatcher m(cg);
  std::vector<uint32_t> mask(m.mask_words());
  std::vector<int32_t> ids;
  for (int step = 0; step < kMaxSteps && !m.terminated(); ++step) {
    Stopwatch watch;
    m.fill_next_token_mask(mask);
    check_time(watch, cg->budget().mask_seconds + cg->budget().point_seconds, "a mask");
    ids.clear();
    for (int32_t id = 0; id < cg->vocab().size(); ++id) {
      if (mask_has(mask, id)) ids.push_back(id);
    }
    if (ids.empty()) return;
    const auto pick = static_cast<uint8_t>(static_cast<size_t>(step) < drive.size() ? drive[static_cast<size_t>(step)] : 0);
    watch.reset();
    if (!m.accept_token(ids[pick % ids.size()])) {
      // Refused only where the text would be readable in too many ways, which a mask
      // cannot see (grammar_matcher.h): failed() says so, and the generation ends.
      if (m.failed()) return;
      fail("a token of the mask was refused");
    }
    check_time(watch, 0, "accepting a token");
  }
}

}  // namespace
}  // namespace llms::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace llms;
  fuzz::GrammarInput in;
  if (!fuzz::split_grammar_input(data, size, &in)) return 0;
  const GrammarBudget budget = fuzz::budget();
  const Stopwatch watch;
  WorkMeter meter(budget.compile_work, budget.compile_seconds);
  GrammarLimits limits;
  limits.meter = &meter;
  auto g = fuzz::parse_grammar_input(in, limits);
  fuzz::check_time(watch, budget.compile_seconds, "parsing");
  if (!g.ok()) return 0;
  GrammarBudget rest = budget;
  rest.compile_work = std::max<int64_t>(1, budget.compile_work - meter.used());
  rest.compile_seconds = std::max(1e-3, budget.compile_seconds - watch.elapsed_s());
  auto cg = CompiledGrammar::compile(std::make_shared<const Grammar>(std::move(g).value()), fuzz::vocab(), rest);
  fuzz::check_time(watch, budget.compile_seconds, "parsing and compiling");
  if (!cg.ok()) {
    if (cg.status().code() != StatusCode::kResourceExhausted) fuzz::fail("compile: " + cg.status().to_string());
    return 0;
  }
  fuzz::classify_points(*cg.value());
  fuzz::walk(cg.value(), in.drive);
  return 0;
}
