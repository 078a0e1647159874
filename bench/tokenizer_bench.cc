// Tokenizer throughput: encode MB/s (and decode tokens/s) on one core for the
// SentencePiece and byte-level BPE vocabularies in ../shared.
//
// The text is generated: English-like prose from a fixed word list (numbers,
// punctuation, paragraphs) with the multilingual lines of the shared .inp test files
// mixed in, ~4 MiB, encoded in prompt-sized chunks of about 4 KiB.
//
//   build/tok-rel/bench/tokenizer_bench [--benchmark_filter=Encode]
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "base/random.h"
#include "io/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace llms {
namespace {

constexpr size_t kCorpusBytes = 4u << 20;
constexpr size_t kChunkBytes = 4096;

const char* const kWords[] = {
    "the", "of", "and", "to", "a", "in", "is", "that", "for", "it", "as", "was", "with", "be", "by", "on", "not",
    "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an", "had", "they", "you", "were",
    "their", "one", "all", "we", "can", "her", "has", "there", "been", "if", "more", "when", "will", "would",
    "who", "so", "no", "model", "server", "request", "latency", "throughput", "token", "cache", "memory",
    "Once", "upon", "time", "little", "girl", "named", "Lily", "She", "loved", "play", "outside", "park",
    "quantization", "attention", "transformer", "scheduler", "kernel", "vectorized", "performance", "inference",
    "However", "Therefore", "although", "because", "between", "through", "during", "without", "government",
    "international", "understanding", "development", "information", "important", "different", "something",
    "it's", "don't", "they're", "we've", "I'm", "you'll", "he'd", "naïve", "café", "résumé", "Zürich"};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Lines of the shared .inp vectors (many scripts, emoji, odd whitespace).
std::vector<std::string> multilingual_lines() {
  std::vector<std::string> lines;
  const std::string raw = read_file(std::string(LLMSERVE_SHARED_DIR) + "/tokenizer/ggml-vocab-gpt-2.gguf.inp");
  std::istringstream ss(raw);
  for (std::string line; std::getline(ss, line);) {
    if (!line.empty() && line != "__ggml_vocab_test__") lines.push_back(line);
  }
  return lines;
}

std::string make_corpus() {
  const std::vector<std::string> extra = multilingual_lines();
  Rng rng(2024);
  std::string text;
  text.reserve(kCorpusBytes + 1024);
  const size_t num_words = std::size(kWords);
  while (text.size() < kCorpusBytes) {
    const size_t sentence = 6 + rng.below(18);
    for (size_t i = 0; i < sentence; ++i) {
      // Zipf-like: low indices (common words) far more often.
      const double u = rng.uniform();
      const size_t w = static_cast<size_t>(u * u * u * static_cast<double>(num_words));
      if (i > 0) text += ' ';
      if (rng.below(40) == 0) {
        text += std::to_string(rng.below(100000));
      } else {
        text += kWords[w];
      }
      if (rng.below(12) == 0) text += ',';
    }
    text += rng.below(5) == 0 ? "? " : ". ";
    if (rng.below(8) == 0) text += "\n\n";
    if (!extra.empty() && rng.below(25) == 0) text += extra[rng.below(extra.size())] + "\n";
  }
  return text;
}

// Prompt-sized pieces cut at spaces, so no chunk boundary falls inside a character.
std::vector<std::string> make_chunks(const std::string& corpus) {
  std::vector<std::string> chunks;
  size_t pos = 0;
  while (pos < corpus.size()) {
    size_t end = std::min(corpus.size(), pos + kChunkBytes);
    if (end < corpus.size()) {
      const size_t sp = corpus.rfind(' ', end);
      if (sp != std::string::npos && sp > pos) end = sp;
    }
    chunks.push_back(corpus.substr(pos, end - pos));
    pos = end;
  }
  return chunks;
}

void bm_encode(benchmark::State& state, const Tokenizer* tok, const std::vector<std::string>* chunks) {
  size_t bytes = 0, tokens = 0;
  EncodeOptions opts;
  opts.add_bos = false;
  for (auto _ : state) {
    for (const std::string& c : *chunks) {
      const auto ids = tok->encode(c, opts);
      tokens += ids.size();
      bytes += c.size();
      benchmark::DoNotOptimize(ids.data());
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
  state.counters["bytes/token"] = static_cast<double>(bytes) / static_cast<double>(std::max<size_t>(tokens, 1));
}

void bm_decode(benchmark::State& state, const Tokenizer* tok, const std::vector<std::vector<int32_t>>* ids) {
  size_t tokens = 0, bytes = 0;
  for (auto _ : state) {
    for (const auto& v : *ids) {
      const std::string text = tok->decode(v);
      tokens += v.size();
      bytes += text.size();
      benchmark::DoNotOptimize(text.data());
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
}

}  // namespace
}  // namespace llms

int main(int argc, char** argv) {
  using namespace llms;
  benchmark::Initialize(&argc, argv);
  const auto* chunks = new std::vector<std::string>(make_chunks(make_corpus()));
  const std::vector<std::pair<std::string, std::string>> vocabs = {
      {"spm/llama", "tokenizer/ggml-vocab-llama-spm.gguf"},
      {"spm/stories260K", "models/stories260K.gguf"},
      {"bpe/gpt-2", "tokenizer/ggml-vocab-gpt-2.gguf"},
      {"bpe/deepseek-coder", "tokenizer/ggml-vocab-deepseek-coder.gguf"},
  };
  int registered = 0;
  for (const auto& [label, relative] : vocabs) {
    const std::string path = std::string(LLMSERVE_SHARED_DIR) + "/" + relative;
    if (!std::filesystem::exists(path)) {
      std::fprintf(stderr, "skipping %s: %s is absent\n", label.c_str(), path.c_str());
      continue;
    }
    auto file = GgufFile::open(path);
    auto tok = file.ok() ? Tokenizer::from_gguf(*file) : Result<std::unique_ptr<Tokenizer>>(file.status());
    if (!tok.ok()) {
      std::fprintf(stderr, "skipping %s: %s\n", label.c_str(), tok.status().to_string().c_str());
      continue;
    }
    const Tokenizer* t = std::move(tok).value().release();  // lives until exit
    auto* ids = new std::vector<std::vector<int32_t>>();
    for (const auto& c : *chunks) ids->push_back(t->encode(c));
    benchmark::RegisterBenchmark(("Encode/" + label).c_str(), bm_encode, t, chunks)->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("Decode/" + label).c_str(), bm_decode, t, ids)->Unit(benchmark::kMillisecond);
    ++registered;
  }
  if (registered == 0) {
    std::fprintf(stderr, "no vocabulary found under %s; nothing to measure\n", LLMSERVE_SHARED_DIR);
    return 1;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
