// HfTokenizerSpec: a Hugging Face tokenizer.json read into plain data, every
// component checked and translated into the few shapes the Tokenizer runs:
//
//   normalizer     → a list of text rewrites (Prepend, Replace, Lowercase, Strip, NFC/NFKC/NFD/NFKD)
//   pre_tokenizer  → a list of steps over pieces: regex splits with one of the five
//                    split behaviours, ByteLevel's prefix space, Metaspace's rewrite
//   model          → BPE (ranked merges; byte-level or character symbols, byte fallback,
//                    fused unknowns, ignore_merges, subword prefix/suffix) or Unigram
//   post_processor → the token ids put before and after a single sequence
//   decoder        → how ids become text: the byte-level alphabet, or SentencePiece's
//                    '▁' with byte fallback, and whether a leading space is dropped
//
// parse_tokenizer_json() refuses what it does not understand (an unknown component, a
// field that changes the result) with an error naming it; nothing is silently ignored
// except fields that affect only offsets, padding or truncation.
//
// Thread-safety: plain data.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "tokenizer/generation_defaults.h"

namespace llms {

struct HfAddedToken {
  int32_t id = -1;
  std::string content;
  bool special = false;      // matched only when the caller parses special tokens
  bool lstrip = false;       // swallows the whitespace before it
  bool rstrip = false;       // swallows the whitespace after it
  bool normalized = false;   // matched in the normalized text (its content normalized too)
  bool single_word = false;  // matched only where it is not part of a longer word
};

struct HfNormalizerStep {
  enum class Kind { kPrepend, kReplace, kLowercase, kStrip, kNfc, kNfkc, kNfd, kNfkd };
  Kind kind = Kind::kPrepend;
  std::string pattern;  // kReplace: a PCRE2 pattern (literal strings are escaped)
  std::string content;  // kPrepend: the prefix; kReplace: the replacement
  bool strip_left = false;
  bool strip_right = false;
};

// How a split treats the delimiters it finds (tokenizers' SplitDelimiterBehavior).
enum class HfSplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

struct HfPreTokenizerStep {
  enum class Kind {
    kSplit,        // every piece cut at the matches of `pattern`
    kPrefixSpace,  // ByteLevel(add_prefix_space): ' ' before a piece that lacks one
    kMetaspace,    // ' ' → `replacement`, and `replacement` put first as `prepend` says
  };
  enum class Prepend { kAlways, kFirst, kNever };
  Kind kind = Kind::kSplit;
  std::string pattern;
  HfSplitBehavior behavior = HfSplitBehavior::kIsolated;
  bool invert = false;  // the matches are the pieces, the text between them the delimiters
  std::string replacement;
  Prepend prepend = Prepend::kAlways;
};

struct HfModelSpec {
  enum class Kind { kBpe, kUnigram };
  Kind kind = Kind::kBpe;
  std::vector<std::string> vocab;  // by id; "" where the file has no token of that id
  std::vector<float> scores;       // Unigram: log-probability of each piece
  std::vector<std::string> merges;  // BPE: "left right", rank = index
  int32_t unk_id = -1;
  bool byte_fallback = false;
  bool fuse_unk = false;
  bool ignore_merges = false;
  std::string continuing_subword_prefix;
  std::string end_of_word_suffix;
};

struct HfDecoderSpec {
  enum class Style {
    kByteLevel,      // token texts are in the byte-level alphabet
    kSentencePiece,  // '▁' is a space; <0xNN> pieces are bytes
  };
  Style style = Style::kByteLevel;
  bool strip_leading_space = false;  // one leading space of the text is dropped
};

struct HfTokenizerSpec {
  HfModelSpec model;
  std::vector<HfAddedToken> added_tokens;
  std::vector<HfNormalizerStep> normalizer;
  std::vector<HfPreTokenizerStep> pre_tokenizer;
  bool byte_level = false;  // the pre-tokenizer maps bytes to the byte-level alphabet
  std::string split_pattern;  // the pattern of the first Split step, as the file spells it
  std::vector<int32_t> prefix_ids;  // post-processor: before the sequence
  std::vector<int32_t> suffix_ids;  // and after it
  bool has_post_processor = false;
  HfDecoderSpec decoder;
};

// What the files beside tokenizer.json add (tokenizer_config.json, special_tokens_map.json,
// chat_template.jinja, generation_config.json). Texts are "" when absent.
struct HfTokenizerConfig {
  std::string bos_token;
  std::string eos_token;
  std::string unk_token;
  std::string pad_token;
  // config.json / generation_config.json ids, used when no text names the token.
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  // Set by LLaMA-family configs: they rebuild the post-processor from these flags.
  int add_bos = -1;  // -1: not said; 0/1
  int add_eos = -1;
  std::string chat_template;  // the default template
  std::vector<std::pair<std::string, std::string>> named_chat_templates;  // (name, template), "default" excluded
  GenerationDefaults generation;  // generation_config.json; its eos ids also end generation
};

// Parses and checks a tokenizer.json text. Errors name the component or field
// ("tokenizer.json: pre_tokenizer: 'UnicodeScripts' is not supported").
Result<HfTokenizerSpec> parse_tokenizer_json(std::string_view text);

}  // namespace llms
