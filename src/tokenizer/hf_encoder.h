// HfEncoder: text → ids the way Hugging Face's tokenizers library runs a
// tokenizer.json: added tokens are cut out of the raw text first (those with
// normalized = false), each remaining fragment is normalized, added tokens with
// normalized = true are cut out of the normalized text (their own texts normalized
// the same way), and what is left is pre-tokenized into pieces that the model (BPE or
// Unigram) encodes one by one. Added tokens honour lstrip, rstrip and single_word.
//
// Special added tokens are recognised only when the caller asks (parse_special), as
// for GGUF vocabularies, so user text cannot inject them; non-special added tokens
// are always recognised.
//
// Thread-safety: immutable after create(); encode() may run on many threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "tokenizer/bpe.h"
#include "tokenizer/hf_pipeline.h"
#include "tokenizer/hf_tokenizer_spec.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/unigram.h"
#include "tokenizer/vocab.h"

namespace llms {

// Finds added tokens in text and applies their flags to the cut.
class AddedTokenMatcher {
 public:
  void add(const HfAddedToken& token, std::string_view text);
  bool empty() const { return matcher_.empty(); }
  // Like SpecialTokenMatcher::split, with single_word, lstrip and rstrip applied:
  // whitespace a token strips is dropped from the neighbouring text.
  void split(std::string_view text, std::vector<TextFragment>* out) const;

 private:
  struct Flags {
    bool lstrip = false;
    bool rstrip = false;
    bool single_word = false;
  };
  SpecialTokenMatcher matcher_;
  std::unordered_map<int32_t, Flags> flags_;
};

class HfEncoder {
 public:
  // `vocab` (built from the same spec) must outlive the encoder.
  static Result<std::unique_ptr<HfEncoder>> create(const HfTokenizerSpec& spec, const Vocab& vocab);
  ~HfEncoder();

  // Appends the ids of `text` (no BOS/EOS; the Tokenizer adds the post-processor's).
  void encode(std::string_view text, bool parse_special, std::vector<int32_t>* out) const;

 private:
  HfEncoder() = default;
  // Encodes text that holds no added token; `at_start`: it begins the input.
  void encode_fragment(std::string_view text, bool at_start, std::vector<int32_t>* out) const;

  std::unique_ptr<HfTextPipeline> pipeline_;
  std::unique_ptr<BpeModel> bpe_;
  std::unique_ptr<UnigramModel> unigram_;
  // [normalized][parse_special]: the tokens matched in the raw text (normalized = false)
  // and in the normalized text; all of them, or the non-special ones only.
  AddedTokenMatcher matchers_[2][2];
};

}  // namespace llms
