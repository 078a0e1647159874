// The table of byte-level BPE pre-tokenizers, one entry per family of
// `tokenizer.ggml.pre` names that the GGUF converters write. Each entry is the
// sequence of split patterns of the model's Hugging Face tokenizer.json, applied one
// after another: every pattern splits each piece left by the previous one into its
// matches and the text between them (the "Isolated" split of tokenizers).
//
// Thread-safety: constant data.
#pragma once

#include <span>
#include <string_view>
#include <vector>

namespace llms {

struct PreTokenizerSpec {
  std::vector<std::string_view> names;     // values of tokenizer.ggml.pre; the first is canonical
  std::vector<std::string_view> patterns;  // PCRE2 syntax
  bool ignore_merges = false;              // a piece that is already a token is emitted without merging
  bool add_bos = false;                    // default of add_bos when the file does not say
};

std::span<const PreTokenizerSpec> pre_tokenizer_specs();

// GPT-2's split pattern (what a tokenizer.json ByteLevel pre-tokenizer with use_regex runs).
std::string_view gpt2_split_pattern();

// The spec whose names contain `name`, or nullptr.
const PreTokenizerSpec* find_pre_tokenizer_spec(std::string_view name);

}  // namespace llms
