// Helpers shared by the tokenizer tests: where the shared test data lives and how to
// load a tokenizer from it. Tests skip (not fail) when the data is absent.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "io/gguf_file.h"
#include "io/gguf_writer.h"
#include "tokenizer/tokenizer.h"

namespace llms::testing {

inline std::string shared_path(const std::string& relative) {
  return std::string(LLMSERVE_SHARED_DIR) + "/" + relative;
}

inline bool read_file(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

// The inputs of a ggml-vocab-*.gguf.inp file (separated by "__ggml_vocab_test__" lines).
inline std::vector<std::string> split_vocab_inputs(const std::string& raw) {
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> parts;
  size_t pos = 0;
  for (;;) {
    const size_t next = raw.find(sep, pos);
    if (next == std::string::npos) {
      parts.push_back(raw.substr(pos));
      break;
    }
    parts.push_back(raw.substr(pos, next - pos));
    pos = next + sep.size();
  }
  if (!parts.empty() && parts.back().empty()) parts.pop_back();  // after the final separator
  return parts;
}

// The expected ids of a .out file: one line of space-separated ids per input.
inline std::vector<std::vector<int32_t>> parse_vocab_ids(const std::string& raw) {
  std::vector<std::vector<int32_t>> lines;
  size_t pos = 0;
  while (pos < raw.size()) {
    size_t end = raw.find('\n', pos);
    if (end == std::string::npos) end = raw.size();
    std::vector<int32_t> ids;
    std::istringstream ss(raw.substr(pos, end - pos));
    for (int64_t id; ss >> id;) ids.push_back(static_cast<int32_t>(id));
    lines.push_back(std::move(ids));
    pos = end + 1;
  }
  return lines;
}

// A GGUF file and the tokenizer read from it; the file must outlive the tokenizer.
struct LoadedTokenizer {
  std::unique_ptr<GgufFile> file;
  std::unique_ptr<Tokenizer> tok;
};

// Loads ../shared/<relative>; empty result (and a message in *why) when the file is absent.
inline LoadedTokenizer load_shared_tokenizer(const std::string& relative, std::string* why) {
  LoadedTokenizer lt;
  const std::string path = shared_path(relative);
  if (!std::filesystem::exists(path)) {
    *why = "test data " + path + " is absent (LLMSERVE_SHARED_DIR)";
    return lt;
  }
  auto file = GgufFile::open(path);
  if (!file.ok()) {
    *why = file.status().to_string();
    return lt;
  }
  lt.file = std::make_unique<GgufFile>(std::move(file).value());
  auto tok = Tokenizer::from_gguf(*lt.file);
  if (!tok.ok()) {
    *why = tok.status().to_string();
    lt.file.reset();
    return lt;
  }
  lt.tok = std::move(tok).value();
  return lt;
}

// A vocabulary-only GGUF built in memory: the bytes, the parsed file and the result
// of loading a tokenizer from it.
struct MemoryVocab {
  std::vector<uint8_t> bytes;
  std::unique_ptr<GgufFile> file;
  Result<std::unique_ptr<Tokenizer>> tok = Status(StatusCode::kInternal, "not loaded");
};

// `model` is tokenizer.ggml.model; `extra` sets further keys (merges, pre, ids, ...).
inline MemoryVocab make_vocab(const std::string& model, const std::vector<std::string>& tokens,
                              const std::vector<int32_t>& types,
                              const std::function<void(GgufWriter&)>& extra = nullptr) {
  GgufWriter w;
  w.set("general.architecture", gguf::Value::string("llama"));
  w.set("tokenizer.ggml.model", gguf::Value::string(model));
  w.set("tokenizer.ggml.tokens", gguf::Value::string_array(tokens));
  if (!types.empty()) w.set("tokenizer.ggml.token_type", gguf::Value::i32_array(types));
  if (extra) extra(w);
  MemoryVocab v;
  v.bytes = w.write_to_memory();
  auto file = GgufFile::parse(v.bytes);
  if (!file.ok()) {
    v.tok = file.status();
    return v;
  }
  v.file = std::make_unique<GgufFile>(std::move(file).value());
  v.tok = Tokenizer::from_gguf(*v.file);
  return v;
}

}  // namespace llms::testing

// Declares `lt` (a LoadedTokenizer for ../shared/<relative>) or skips the test when
// the data file is absent; a file that exists but does not load fails the test.
#define LLMS_LOAD_TOKENIZER_OR_SKIP(lt, relative)                                                   \
  std::string lt##_why;                                                                             \
  auto lt = ::llms::testing::load_shared_tokenizer(relative, &lt##_why);                            \
  if (lt.tok == nullptr) {                                                                          \
    if (!std::filesystem::exists(::llms::testing::shared_path(relative))) GTEST_SKIP() << lt##_why; \
    FAIL() << lt##_why;                                                                             \
  }
