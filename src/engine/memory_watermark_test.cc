// The process-memory watermark counts the memory the process owns: a model that fits
// (larger than half of the memory limit, so counting its file pages on top of its
// repacked panels would put it over the high mark) is loaded and served.
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "base/memory.h"
#include "engine/admission.h"
#include "engine/engine.h"
#include "engine/testing/engine_test_util.h"
#include "model/model.h"
#include "tools/synthetic.h"

namespace llms {
namespace {

using testing::collect;
using testing::greedy_request;

// Under AddressSanitizer the process's anonymous memory, which the watermark reads,
// holds its shadow and quarantine: the shares measured here mean nothing there.
using testing::kUnderAsan;

TEST(MemoryWatermarkTest, ModelLargerThanHalfTheLimitIsServed) {
  if (kUnderAsan) GTEST_SKIP() << "process memory is not the program's own under AddressSanitizer";
  SyntheticSpec spec;
  spec.n_vocab = 512, spec.n_embd = 768, spec.n_layer = 3, spec.n_head = 12, spec.n_head_kv = 4, spec.n_ff = 2048;
  spec.seed = 3;
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_watermark.gguf";
  ASSERT_TRUE(write_synthetic_model(spec, path).ok());
  auto model = Model::load(path).value();
  auto tokenizer = Tokenizer::from_gguf(model->file()).value();
  const int64_t model_bytes = static_cast<int64_t>(model->file().file_size());

  EngineConfig c;
  c.admission.memory_limit_bytes = model_bytes * 19 / 10;  // the model is more than half of it
  c.threads = 1;
  auto engine = Engine::create(*model, *tokenizer, c).value();
  const AdmissionState before = engine->snapshot().admission;
  // The repacked weights are counted (so the mark means something) ...
  EXPECT_GT(before.rss_usage, 0.5) << "owned " << process_rss_bytes() << " of " << c.admission.memory_limit_bytes;
  // ... and the file pages they came from are not.
  EXPECT_LT(before.rss_usage, c.admission.rss_low);
  EXPECT_FALSE(before.overloaded) << before.reason;

  RequestParams request = greedy_request({1, 300, 301, 302, 303}, 4);
  request.ignore_eos = true;
  auto h = engine->submit(request);
  ASSERT_TRUE(h.ok()) << h.status().to_string();
  engine->run_until_idle();
  const auto out = collect(**h);
  EXPECT_EQ(out.finish.reason, FinishReason::kLength);
  EXPECT_EQ(out.tokens.size(), 4u);
  EXPECT_FALSE(engine->snapshot().admission.overloaded);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace llms
