// An observer added from outside the engine sees every request arrive and end (with its
// prompt and generated tokens) and every step's plan, as a quality monitor would.
#include "engine/step_observer.h"

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/testing/engine_test_util.h"

namespace llms {
namespace {

using testing::collect;
using testing::FakeRunner;
using testing::greedy_request;

struct Recorder : StepObserver {
  void on_intake(const Sequence& s) override { arrived.push_back(s.id); }
  void on_schedule(const StepState&, const SchedulePlan& plan) override { planned_tokens += plan.num_tokens; }
  void on_step_done(const StepState& state, const StepResult& r) override {
    ++steps;
    done_tokens += r.plan.num_tokens;
    ok = ok && r.status.ok();
    running_after.push_back(static_cast<int>(state.running.size()));
  }
  void on_finish(const Sequence& s, const FinishEvent& fe) override {
    finished.push_back({std::vector<int32_t>(s.tokens.begin(), s.tokens.begin() + s.prompt_len),
                        std::vector<int32_t>(s.tokens.begin() + s.prompt_len, s.tokens.end()), fe.reason});
  }
  struct Finished {
    std::vector<int32_t> prompt, output;
    FinishReason reason;
  };
  std::vector<uint64_t> arrived;
  std::vector<Finished> finished;
  std::vector<int> running_after;
  int64_t planned_tokens = 0, done_tokens = 0;
  int steps = 0;
  bool ok = true;
};

TEST(StepObserverTest, AnAddedObserverSeesStepsAndFinishedRequests) {
  EngineConfig c;
  auto engine = std::make_unique<Engine>(std::make_unique<FakeRunner>(), testing::synthetic_tokenizer(), c,
                                         Hash128{1, 1}, 64, 512);
  auto& rec = dynamic_cast<Recorder&>(engine->add_observer(std::make_unique<Recorder>()));
  const std::vector<std::vector<int32_t>> prompts = {{5, 6, 7}, {9, 10, 11, 12, 13}};
  std::vector<std::shared_ptr<RequestHandle>> handles;
  for (const auto& p : prompts) {
    RequestParams r = greedy_request(p, 4);
    r.ignore_eos = true;
    handles.push_back(engine->submit(r).value());
  }
  engine->run_until_idle();

  EXPECT_EQ(rec.arrived.size(), 2u);
  ASSERT_EQ(rec.finished.size(), 2u);
  int64_t computed = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto out = collect(*handles[i]);
    // on_finish saw the request's prompt and exactly the tokens its client got.
    const auto& f = rec.finished[rec.finished[0].prompt == prompts[i] ? 0 : 1];
    EXPECT_EQ(f.prompt, prompts[i]);
    EXPECT_EQ(f.output, out.tokens);
    EXPECT_EQ(f.reason, FinishReason::kLength);
    // Every position but the last generated one went through the model.
    computed += static_cast<int64_t>(prompts[i].size() + out.tokens.size()) - 1;
  }
  EXPECT_EQ(rec.planned_tokens, computed);
  EXPECT_EQ(rec.done_tokens, computed);
  EXPECT_TRUE(rec.ok);
  ASSERT_FALSE(rec.running_after.empty());
  EXPECT_EQ(rec.running_after.back(), 0);  // the last step ended both
  EXPECT_EQ(rec.steps, static_cast<int>(rec.running_after.size()));
}

}  // namespace
}  // namespace llms
