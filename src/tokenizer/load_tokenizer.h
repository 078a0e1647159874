// load_tokenizer(): the one entry point that turns a path into a Tokenizer, whatever
// the model's form: a GGUF file (its tokenizer.ggml.* metadata), or a Hugging Face
// model directory (tokenizer.json, with tokenizer_config.json's special tokens and
// chat template, chat_template.jinja, special_tokens_map.json, config.json's and
// generation_config.json's ids and sampling defaults). A directory that holds only the
// tokenizer files is enough.
//
// Thread-safety: pure functions (they read files).
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "tokenizer/hf_tokenizer_spec.h"
#include "tokenizer/tokenizer.h"

namespace llms {

// A GGUF file or a Hugging Face directory. Errors name the file and what is wrong in it.
Result<std::unique_ptr<Tokenizer>> load_tokenizer(const std::string& path);

// A Hugging Face directory (tokenizer.json required).
Result<std::unique_ptr<Tokenizer>> load_hf_tokenizer(const std::string& dir);

// What the files beside tokenizer.json say (each file optional).
Result<HfTokenizerConfig> read_hf_tokenizer_config(const std::string& dir);

// generation_config.json's defaults; empty when the directory has none.
Result<GenerationDefaults> read_generation_config(const std::string& dir);

}  // namespace llms
