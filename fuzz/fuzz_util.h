// Helpers shared by the libFuzzer targets: where the shared test data lives (the
// LLMSERVE_SHARED_DIR environment variable, else the build's ../shared), loading a
// tokenizer from it, and a hard stop that names the broken property.
//
// Thread-safety: load once (from LLVMFuzzerInitialize or a function-local static);
// the loaded tokenizers are immutable.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "io/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace llms::fuzz {

std::string shared_dir();

struct LoadedVocab {
  std::string name;  // file name, e.g. "ggml-vocab-gpt-2.gguf"
  std::unique_ptr<GgufFile> file;
  std::unique_ptr<Tokenizer> tok;
};

// Every vocabulary in <shared>/tokenizer/*.gguf and models/stories260K.gguf. A file
// that exists but does not load aborts: the fuzzer would test nothing.
const std::vector<LoadedVocab>& shared_vocabs();
// The stories260K model's tokenizer (the model the server tests serve); aborts when absent.
const Tokenizer& stories_tokenizer();

// Prints "fuzz property failed: <what>" and the input's size, then aborts so that
// libFuzzer writes the reproducer.
[[noreturn]] void fail(std::string_view what);

}  // namespace llms::fuzz
