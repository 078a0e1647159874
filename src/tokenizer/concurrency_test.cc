// A Tokenizer is shared by every request thread: concurrent encode/decode calls must
// give exactly what the same calls give one at a time.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "tokenizer/testing/tokenizer_test_util.h"

namespace llms {
namespace {

TEST(TokenizerConcurrencyTest, ConcurrentCallsMatchSequentialResults) {
  for (const char* name : {"tokenizer/ggml-vocab-gpt-2.gguf", "tokenizer/ggml-vocab-llama-spm.gguf"}) {
    LLMS_LOAD_TOKENIZER_OR_SKIP(lt, name);
    std::vector<std::string> texts;
    for (int i = 0; i < 64; ++i) {
      texts.push_back("Request " + std::to_string(i) + ": naïve café 日本語 🦙 " + std::string(i % 7, ' ') +
                      "the quick brown fox jumps over the lazy dog " + std::to_string(i * 7919));
    }
    std::vector<std::vector<int32_t>> expected;
    for (const auto& t : texts) expected.push_back(lt.tok->encode(t));

    constexpr int kThreads = 4;
    std::vector<int> mismatches(kThreads, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int round = 0; round < 5; ++round) {
          for (size_t i = 0; i < texts.size(); ++i) {
            const size_t k = (i + static_cast<size_t>(t) * 13) % texts.size();
            const auto ids = lt.tok->encode(texts[k]);
            if (ids != expected[k] || lt.tok->decode(ids) != texts[k]) ++mismatches[t];
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[t], 0) << name << " thread " << t;
  }
}

}  // namespace
}  // namespace llms
