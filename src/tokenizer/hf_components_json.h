// The readers of tokenizer.json's "normalizer" and "pre_tokenizer" sections (used by
// parse_tokenizer_json; separate only to keep files small).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/hf_json.h"
#include "tokenizer/hf_tokenizer_spec.h"

namespace llms {

// A "pattern": {"String": s} (matched literally) or {"Regex": r}, as a PCRE2 pattern.
Result<std::string> parse_pattern(const hfjson::Json& obj, std::string_view where);

// Metaspace's "prepend_scheme" (or the older "add_prefix_space").
Result<HfPreTokenizerStep::Prepend> parse_prepend_scheme(const hfjson::Json& obj, std::string_view where);
// Metaspace's "replacement"; only U+2581 is supported.
Result<std::string> metaspace_replacement(const hfjson::Json& obj, std::string_view where);

// Appends the steps of a normalizer (a Sequence is flattened).
Status parse_normalizer(const hfjson::Json& obj, std::vector<HfNormalizerStep>* out);

// Appends the steps of a pre-tokenizer to spec->pre_tokenizer; sets spec->byte_level
// for ByteLevel.
Status parse_pre_tokenizer(const hfjson::Json& obj, HfTokenizerSpec* spec);

}  // namespace llms
