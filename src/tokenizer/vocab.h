// Vocab: the tokenizer part of a GGUF file (tokenizer.ggml.* keys) read into plain
// data: token texts, scores and types, special token ids and the add_bos/add_eos
// flags. The encoders (spm.h, bpe.h) and the Tokenizer build their own lookup
// structures from it.
//
// Thread-safety: immutable after load; safe to read from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.h"
#include "io/gguf_file.h"

namespace llms {

// Values of tokenizer.ggml.token_type, as the GGUF converters write them.
enum class TokenType : uint8_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,      // <s>, </s>, <|im_start|>: never produced from user text by default
  kUserDefined = 4,  // added tokens matched literally in any input
  kUnused = 5,
  kByte = 6,  // <0xNN> byte fallback pieces of SentencePiece vocabularies
};

enum class VocabModel {
  kSpm,  // tokenizer.ggml.model = "llama": SentencePiece BPE with scores
  kBpe,  // tokenizer.ggml.model = "gpt2": byte-level BPE with ranked merges
};

struct TokenData {
  std::string text;
  float score = 0.0f;
  TokenType type = TokenType::kNormal;
};

// Hash and equality that let an unordered_map<std::string, ...> be searched with a
// string_view without building a std::string (C++20 heterogeneous lookup).
struct TextHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
struct TextEqual {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const { return a == b; }
};
using TextIdMap = std::unordered_map<std::string, int32_t, TextHash, TextEqual>;

struct Vocab {
  VocabModel model = VocabModel::kSpm;
  std::string pre;  // tokenizer.ggml.pre; empty when absent
  std::vector<TokenData> tokens;
  TextIdMap token_to_id;            // a text that occurs twice maps to its last id
  std::vector<std::string> merges;  // "left right", rank = index (BPE only)

  // Special ids; -1 when the vocabulary has none (or names an id out of range).
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int32_t unk_id = -1;
  int32_t sep_id = -1;
  int32_t pad_id = -1;
  int32_t eot_id = -1;
  int32_t eom_id = -1;

  bool add_bos = false;
  bool add_bos_in_metadata = false;  // false: add_bos is the model's default
  bool add_eos = false;
  bool add_space_prefix = false;  // SPM: encode as if the text started with a space

  std::string chat_template;  // tokenizer.chat_template; empty when absent
  // tokenizer.chat_template.<name>: further named templates ("tool_use").
  std::vector<std::pair<std::string, std::string>> named_chat_templates;

  // Only for vocabularies built from a tokenizer.json: a Unigram model (scores are
  // log-probabilities), and the pre-tokenizer's split pattern as the file spells it.
  bool unigram = false;
  std::string pre_pattern;

  int32_t size() const { return static_cast<int32_t>(tokens.size()); }
  bool valid_id(int32_t id) const { return id >= 0 && id < size(); }
  // Id of the token whose text is exactly `text`, or -1.
  int32_t find(std::string_view text) const;

  // Reads the vocabulary from GGUF metadata. Works on vocabulary-only files (no
  // tensors). Errors name the key: a missing token list, arrays of different
  // lengths, an unknown tokenizer.ggml.model.
  static Result<Vocab> from_gguf(const GgufFile& file);
};

}  // namespace llms
