// libFuzzer target for the tokenizer.json reader: any bytes either parse into a
// tokenizer or fail with a Status (never a crash, an exception or a sanitizer report),
// through a structure-aware JSON mutator so that mutations reach the component
// readers. A tokenizer that loads must then encode fixed texts to ids inside its
// vocabulary, decode them, and write its GGUF metadata (or refuse with a Status).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "io/gguf_writer.h"
#include "json_mutator.h"
#include "tokenizer/gguf_tokenizer.h"
#include "tokenizer/hf_tokenizer_spec.h"
#include "tokenizer/tokenizer.h"

namespace {

constexpr std::string_view kTexts[] = {
    "Hello world", " leading  spaces\tand\nnewlines ", "<s>special</s> <|endoftext|>", "caf\xC3\xA9 12345 \xF0\x9F\xA6\x99",
    "\xFF\xFE invalid bytes \xC3",
};

void exercise(const llms::Tokenizer& tok) {
  using namespace llms;
  for (const std::string_view text : kTexts) {
    for (const bool special : {false, true}) {
      EncodeOptions opts;
      opts.parse_special = special;
      const auto ids = tok.encode(text, opts);
      for (const int32_t id : ids) {
        if (!tok.is_valid_id(id)) fuzz::fail("encode gave an id outside the vocabulary");
      }
      (void)tok.decode(ids);
    }
  }
  GgufWriter w;
  (void)set_gguf_tokenizer_metadata(tok, w);
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  return llms::fuzz::mutate_json(data, size, max_size, seed);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace llms;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto spec = parse_tokenizer_json(text);
  if (!spec.ok()) {
    if (spec.status().message().empty()) fuzz::fail("a refused tokenizer.json without a message");
    return 0;
  }
  auto tok = Tokenizer::from_hf(*spec, HfTokenizerConfig{});
  if (!tok.ok()) {
    if (tok.status().message().empty()) fuzz::fail("a refused tokenizer without a message");
    return 0;
  }
  exercise(**tok);
  return 0;
}
