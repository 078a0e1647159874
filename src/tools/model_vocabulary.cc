#include "tools/model_vocabulary.h"

#include "tokenizer/gguf_tokenizer.h"
#include "tokenizer/load_tokenizer.h"

namespace llms {

Status add_vocabulary(const GgufFile& source, const std::string& vocab_from, GgufWriter& w) {
  if (!vocab_from.empty()) {
    LLMS_ASSIGN_OR_RETURN(GgufFile vocab, GgufFile::open(vocab_from));
    for (const auto& [key, value] : vocab.metadata()) {
      if (key.rfind("tokenizer.", 0) == 0) w.set(key, value);
    }
    return ok_status();
  }
  if (!source.assembled()) return ok_status();
  auto tok = load_tokenizer(source);
  if (!tok.ok()) {
    return Status(tok.status().code(), tok.status().message() +
                                           " (the GGUF file needs a vocabulary: give --vocab-from FILE.gguf of the "
                                           "same vocabulary)");
  }
  return set_gguf_tokenizer_metadata(**tok, w);
}

}  // namespace llms
