// The GGUF tokenizer metadata of a Tokenizer: what `convert --from hf` writes so that
// the GGUF file carries the tokenizer of the Hugging Face directory, following llama.cpp's
// convert_hf_to_gguf.py mapping (LlamaHfVocab for SentencePiece-style BPE: model
// "llama", pre "default", every score -1000, <0xNN> pieces BYTE, special tokens
// CONTROL; _set_vocab_gpt2 for byte-level BPE: model "gpt2", the pre-tokenizer's
// llama.cpp name, merges, added tokens CONTROL or USER_DEFINED; holes in the ids as
// "[PADn]" UNUSED), plus the special ids, add_bos/add_eos and the chat templates.
//
// Thread-safety: pure function; the writer is the caller's.
#pragma once

#include "base/status.h"
#include "io/gguf_writer.h"
#include "tokenizer/tokenizer.h"

namespace llms {

// Sets the tokenizer.* keys of `tok` in `w`. Errors (nothing written) for what llama.cpp
// cannot represent: a Unigram model, a byte-level pre-tokenizer it has no name for.
Status set_gguf_tokenizer_metadata(const Tokenizer& tok, GgufWriter& w);

}  // namespace llms
