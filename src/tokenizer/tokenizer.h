// Tokenizer: text ↔ token ids for the vocabulary of a GGUF file, reproducing the
// tokenization the model was trained with.
//
//   * SentencePiece-style vocabularies (tokenizer.ggml.model = "llama"): score-driven
//     merges, <0xNN> byte fallback, the leading-space rule (a space is prepended to the
//     text and to text that follows a special token; decoding removes it again).
//   * Byte-level BPE (tokenizer.ggml.model = "gpt2"): the pre-tokenizer named by
//     tokenizer.ggml.pre (an unknown name is an error at load), then ranked merges.
//
// Special tokens: control tokens ("<s>", "<|im_start|>") are recognised in the input
// only with EncodeOptions::parse_special, so user text cannot inject them. User-defined
// tokens (added tokens that are not special, e.g. DeepSeek-Coder's "ü") are part of
// the ordinary vocabulary and are always matched, as the Hugging Face tokenizers do;
// the reference vectors depend on it.
//
// Bytes: encode accepts any bytes. Invalid UTF-8 is not an error and is not replaced:
// SentencePiece vocabularies spell such bytes with <0xNN> tokens, byte-level BPE gives
// each invalid byte a piece of its own, and decode() returns the exact bytes again
// (for vocabularies that have a token for every byte). decode() output is therefore
// only as valid as the ids; StreamingDecoder returns valid UTF-8 only.
//
// A Hugging Face tokenizer.json (from_hf) runs its own normalizer, pre-tokenizer and
// model (hf_encoder.h), and fills the same vocabulary tables the way llama.cpp's
// converter maps it to GGUF, so the rest of the server sees one kind of tokenizer.
//
// Thread-safety: immutable after from_gguf() / from_hf(); encode() and decode() may run
// concurrently from any number of threads.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "io/gguf_file.h"
#include "tokenizer/generation_defaults.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/vocab.h"

namespace llms {

class BpeModel;
class HfEncoder;
class PreTokenizer;
struct HfTokenizerConfig;
struct HfTokenizerSpec;
class SpmModel;

struct EncodeOptions {
  // Add the tokens the vocabulary asks for: BOS when its add_bos flag is set, EOS when
  // its add_eos flag is set. False adds neither.
  bool add_bos = true;
  // Recognise control tokens written in the text ("<|im_start|>" → one token). Only
  // for trusted text such as a rendered chat template.
  bool parse_special = false;
};

struct DecodeOptions {
  // Write control tokens as their text ("<s>") instead of nothing.
  bool render_special = false;
  // SentencePiece vocabularies: drop the space the encoder put in front of the text.
  bool strip_leading_space = true;
};

class Tokenizer {
 public:
  // Reads the vocabulary from GGUF metadata; vocabulary-only files (no tensors) work.
  static Result<std::unique_ptr<Tokenizer>> from_gguf(const GgufFile& file);
  // Builds the tokenizer a tokenizer.json describes, with what the files beside it add.
  static Result<std::unique_ptr<Tokenizer>> from_hf(const HfTokenizerSpec& spec, const HfTokenizerConfig& config);
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  std::vector<int32_t> encode(std::string_view text, const EncodeOptions& opts = {}) const;

  // The whole text of `ids`; ids outside the vocabulary contribute nothing.
  std::string decode(std::span<const int32_t> ids) const { return decode(ids, DecodeOptions{}); }
  std::string decode(std::span<const int32_t> ids, const DecodeOptions& opts) const;

  // Raw bytes of one token as it appears in decoded text ("" for control tokens and
  // invalid ids). The leading-space rule of decode() is not applied.
  std::string token_to_piece(int32_t id) const { return std::string(piece_view(id)); }
  std::string_view piece_view(int32_t id) const { return piece_view(id, /*render_special=*/false); }
  // Same, with control tokens written as their text when `render_special`.
  std::string_view piece_view(int32_t id, bool render_special) const;
  // The token's text as the vocabulary stores it ("▁the", "Ġthe", "<s>"); "" for invalid ids.
  const std::string& token_text(int32_t id) const;
  TokenType token_type(int32_t id) const;
  bool is_control(int32_t id) const;
  // Id of the token whose vocabulary text is exactly `text`, or -1.
  int32_t find_token(std::string_view text) const { return vocab_.find(text); }

  int32_t vocab_size() const { return vocab_.size(); }
  // The most bytes one token's text can take (its piece, or its vocabulary text when
  // rendered): what bounds the size of an answer of N tokens.
  size_t max_piece_bytes() const { return max_piece_bytes_; }
  bool is_valid_id(int32_t id) const { return vocab_.valid_id(id); }
  int32_t bos_id() const { return vocab_.bos_id; }
  int32_t eos_id() const { return vocab_.eos_id; }
  int32_t eot_id() const { return vocab_.eot_id; }
  int32_t unk_id() const { return vocab_.unk_id; }
  // EOS, EOT, EOM and the end-of-turn tokens the vocabulary contains (<|im_end|>,
  // <|eot_id|>, <end_of_turn>, <|end|>, <|endoftext|>, ...).
  bool is_end_of_generation(int32_t id) const;
  bool add_bos() const { return vocab_.add_bos; }
  bool add_eos() const { return vocab_.add_eos; }

  VocabModel model() const { return vocab_.model; }
  // The pre-tokenizer in use ("gpt-2", "llama3", ...); empty for SentencePiece.
  const std::string& pre_tokenizer_name() const;
  // True when decoding at the start of a text drops one leading space (SentencePiece).
  bool strips_leading_space() const { return vocab_.model == VocabModel::kSpm && vocab_.add_space_prefix; }
  // tokenizer.chat_template, or "" when the file has none.
  const std::string& chat_template() const { return vocab_.chat_template; }
  // The vocabulary as loaded: for a tokenizer.json, what a GGUF conversion writes
  // (gguf_tokenizer.h). Token types are as the source gave them, before end-of-turn
  // tokens were made control tokens.
  Vocab source_vocab() const;
  // generation_config.json's defaults (empty for GGUF files).
  const GenerationDefaults& generation_defaults() const { return generation_; }
  // True when built from a tokenizer.json.
  bool from_tokenizer_json() const { return hf_ != nullptr; }

 private:
  Tokenizer();
  Status init();
  Status init_hf(const HfTokenizerSpec& spec, const HfTokenizerConfig& config);
  void set_bos_eos_ids();
  void mark_end_of_generation();
  void build_pieces();
  void encode_text(std::string_view text, bool after_special, std::vector<int32_t>* out) const;

  Vocab vocab_;
  std::unique_ptr<PreTokenizer> pre_;
  std::unique_ptr<BpeModel> bpe_;
  std::unique_ptr<SpmModel> spm_;
  std::unique_ptr<HfEncoder> hf_;
  std::vector<int32_t> prefix_ids_;  // put before the text when EncodeOptions::add_bos
  std::vector<int32_t> suffix_ids_;  // and after it
  std::vector<std::pair<int32_t, TokenType>> retyped_;
  GenerationDefaults generation_;  // original types of end-of-turn tokens
  SpecialTokenMatcher user_defined_;  // matched in every input
  SpecialTokenMatcher special_;       // matched with parse_special (control + user-defined + unknown)
  std::vector<std::string> pieces_;   // decoded bytes of each id
  size_t max_piece_bytes_ = 0;        // the longest of pieces_ and the vocabulary's texts
  std::vector<uint8_t> end_of_generation_;
};

}  // namespace llms
