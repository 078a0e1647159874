#include "fuzz_util.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace llms::fuzz {

std::string shared_dir() {
  if (const char* env = std::getenv("LLMSERVE_SHARED_DIR"); env != nullptr && *env != '\0') return env;
  return LLMSERVE_SHARED_DIR;
}

void fail(std::string_view what) {
  std::fprintf(stderr, "fuzz property failed: %.*s\n", static_cast<int>(what.size()), what.data());
  std::abort();
}

namespace {

LoadedVocab load(const std::filesystem::path& path) {
  auto file = GgufFile::open(path.string());
  if (!file.ok()) fail(file.status().to_string());
  LoadedVocab v;
  v.name = path.filename().string();
  v.file = std::make_unique<GgufFile>(std::move(file).value());
  auto tok = Tokenizer::from_gguf(*v.file);
  if (!tok.ok()) fail(tok.status().to_string());
  v.tok = std::move(tok).value();
  return v;
}

std::vector<LoadedVocab> load_all() {
  namespace fs = std::filesystem;
  std::vector<fs::path> paths;
  const fs::path dir = fs::path(shared_dir()) / "tokenizer";
  if (fs::is_directory(dir)) {
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().extension() == ".gguf") paths.push_back(e.path());
    }
  }
  std::sort(paths.begin(), paths.end());
  const fs::path stories = fs::path(shared_dir()) / "models" / "stories260K.gguf";
  if (fs::exists(stories)) paths.push_back(stories);
  if (paths.empty()) fail("no vocabulary under " + shared_dir() + " (set LLMSERVE_SHARED_DIR)");
  std::vector<LoadedVocab> out;
  for (const auto& p : paths) {
    out.push_back(load(p));
    std::fprintf(stderr, "fuzz: vocabulary %s (%d tokens)\n", out.back().name.c_str(), out.back().tok->vocab_size());
  }
  return out;
}

}  // namespace

const std::vector<LoadedVocab>& shared_vocabs() {
  static const std::vector<LoadedVocab> vocabs = load_all();
  return vocabs;
}

const Tokenizer& stories_tokenizer() {
  for (const auto& v : shared_vocabs()) {
    if (v.name == "stories260K.gguf") return *v.tok;
  }
  fail("models/stories260K.gguf is absent under " + shared_dir());
}

}  // namespace llms::fuzz
