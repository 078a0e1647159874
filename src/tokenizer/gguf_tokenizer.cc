#include "tokenizer/gguf_tokenizer.h"

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

namespace llms {

namespace {

void set_id(GgufWriter& w, const std::string& key, int32_t id) {
  if (id >= 0) w.set(key, gguf::Value::u32(static_cast<uint32_t>(id)));
}

}  // namespace

Status set_gguf_tokenizer_metadata(const Tokenizer& tok, GgufWriter& w) {
  const Vocab v = tok.source_vocab();
  const bool spm = v.model == VocabModel::kSpm;
  if (v.unigram) {
    return unimplemented("a Unigram tokenizer.json has no GGUF form here (llama.cpp converts those from "
                         "SentencePiece's tokenizer.model)");
  }
  if (!spm && v.pre.empty()) {
    return unimplemented(fmt::format(
        "llama.cpp has no tokenizer.ggml.pre name for this pre-tokenizer (split pattern '{}'); the GGUF would not "
        "load",
        v.pre_pattern));
  }
  std::vector<std::string> texts;
  std::vector<float> scores;
  std::vector<int32_t> types;
  texts.reserve(v.tokens.size());
  for (const TokenData& t : v.tokens) {
    texts.push_back(t.text);
    scores.push_back(t.score);
    types.push_back(static_cast<int32_t>(t.type));
  }
  w.set("tokenizer.ggml.model", gguf::Value::string(spm ? "llama" : "gpt2"));
  w.set("tokenizer.ggml.pre", gguf::Value::string(v.pre));
  w.set("tokenizer.ggml.tokens", gguf::Value::string_array(texts));
  if (spm) w.set("tokenizer.ggml.scores", gguf::Value::f32_array(scores));
  w.set("tokenizer.ggml.token_type", gguf::Value::i32_array(types));
  if (!spm) w.set("tokenizer.ggml.merges", gguf::Value::string_array(v.merges));
  set_id(w, "tokenizer.ggml.bos_token_id", v.bos_id);
  set_id(w, "tokenizer.ggml.eos_token_id", v.eos_id);
  set_id(w, "tokenizer.ggml.unknown_token_id", v.unk_id);
  set_id(w, "tokenizer.ggml.padding_token_id", v.pad_id);
  w.set("tokenizer.ggml.add_bos_token", gguf::Value::boolean(v.add_bos));
  w.set("tokenizer.ggml.add_eos_token", gguf::Value::boolean(v.add_eos));
  // llama.cpp's default for "llama" vocabularies is a space prefix; say so only when not.
  if (spm && !v.add_space_prefix) w.set("tokenizer.ggml.add_space_prefix", gguf::Value::boolean(false));
  if (!v.chat_template.empty()) w.set("tokenizer.chat_template", gguf::Value::string(v.chat_template));
  for (const auto& [name, text] : v.named_chat_templates) {
    w.set("tokenizer.chat_template." + name, gguf::Value::string(text));
  }
  return ok_status();
}

}  // namespace llms
