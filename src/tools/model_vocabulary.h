// The vocabulary of a GGUF file written from a model: a GGUF source carries its own
// tokenizer.* keys (copied with the rest of its metadata); a Hugging Face directory's
// tokenizer files become those keys as llama.cpp's converter maps them
// (tokenizer/gguf_tokenizer.h), or they are taken from a GGUF file of the same
// vocabulary. Used by `convert --from hf` and `quantize`, so that what they write from
// a directory is a file llama.cpp and llmserve can serve.
//
// Thread-safety: a pure function; the writer is the caller's.
#pragma once

#include <string>

#include "base/status.h"
#include "io/gguf_file.h"
#include "io/gguf_writer.h"

namespace llms {

// Sets the tokenizer.* keys of the file written from `source` in `w`: from
// `vocab_from` (a GGUF file) when it is not empty, else for a directory from its
// tokenizer files (NOT_FOUND naming the directory and --vocab-from when it has none);
// nothing for a GGUF source.
Status add_vocabulary(const GgufFile& source, const std::string& vocab_from, GgufWriter& w);

}  // namespace llms
