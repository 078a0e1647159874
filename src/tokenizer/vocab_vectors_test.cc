// Reference vectors: every input of ../shared/tokenizer/<vocab>.gguf.inp must encode
// (without BOS) to exactly the ids on the matching line of the .out file, and those
// ids must decode back to the input.
#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

#include "tokenizer/testing/tokenizer_test_util.h"

namespace llms {
namespace {

class VocabVectorsTest : public ::testing::TestWithParam<const char*> {};

TEST_P(VocabVectorsTest, EveryInputEncodesToTheReferenceIdsAndDecodesBack) {
  const std::string name = GetParam();
  LLMS_LOAD_TOKENIZER_OR_SKIP(lt, "tokenizer/" + name);
  std::string inp_raw, out_raw;
  ASSERT_TRUE(testing::read_file(testing::shared_path("tokenizer/" + name + ".inp"), &inp_raw)) << name << ".inp";
  ASSERT_TRUE(testing::read_file(testing::shared_path("tokenizer/" + name + ".out"), &out_raw)) << name << ".out";
  const auto inputs = testing::split_vocab_inputs(inp_raw);
  const auto expected = testing::parse_vocab_ids(out_raw);
  ASSERT_EQ(inputs.size(), expected.size()) << "the .inp and .out files of " << name << " disagree in length";
  ASSERT_GT(inputs.size(), 0u);

  EncodeOptions opts;
  opts.add_bos = false;
  size_t encoded_ok = 0, decoded_ok = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto ids = lt.tok->encode(inputs[i], opts);
    EXPECT_EQ(ids, expected[i]) << name << " input #" << i << ": '" << inputs[i] << "'";
    if (ids == expected[i]) ++encoded_ok;
    const std::string text = lt.tok->decode(expected[i]);
    EXPECT_EQ(text, inputs[i]) << name << " input #" << i;
    if (text == inputs[i]) ++decoded_ok;
  }
  std::cout << "[ vectors  ] " << name << ": " << encoded_ok << "/" << inputs.size()
            << " inputs encode to the reference ids, " << decoded_ok << "/" << inputs.size() << " decode back\n";
  RecordProperty("inputs", static_cast<int>(inputs.size()));
  RecordProperty("encoded_ok", static_cast<int>(encoded_ok));
  RecordProperty("decoded_ok", static_cast<int>(decoded_ok));
}

INSTANTIATE_TEST_SUITE_P(SharedVocabs, VocabVectorsTest,
                         ::testing::Values("ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf",
                                           "ggml-vocab-deepseek-coder.gguf"),
                         [](const auto& info) {
                           std::string n = info.param;
                           n = n.substr(11, n.size() - 11 - 5);  // "ggml-vocab-" ... ".gguf"
                           for (char& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace llms
