// Tokenizer::from_hf: the vocabulary tables filled from a tokenizer.json the way
// llama.cpp's convert_hf_to_gguf.py maps one to GGUF (LlamaHfVocab for
// SentencePiece-style files, _set_vocab_gpt2 for byte-level ones), and the encoder that
// runs the file's own pipeline.
#include <fmt/format.h>

#include <algorithm>

#include "tokenizer/hf_encoder.h"
#include "tokenizer/hf_tokenizer_spec.h"
#include "tokenizer/tokenizer.h"

namespace llms {

namespace {

// llama.cpp's LlamaHfVocab gives every piece this score (it has no better one).
constexpr float kSpmScore = -1000.0f;

// The split patterns of tokenizer.json files that llama.cpp names (tokenizer.ggml.pre).
struct KnownPattern {
  std::string_view pattern;
  std::string_view name;
};
constexpr KnownPattern kKnownPatterns[] = {
    {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     "llama-bpe"},
    {R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
     "qwen2"},
};

bool is_byte_token(std::string_view t) {
  return t.size() == 6 && t.substr(0, 3) == "<0x" && t[5] == '>' && std::isxdigit(static_cast<uint8_t>(t[3])) &&
         std::isxdigit(static_cast<uint8_t>(t[4]));
}

// llama.cpp's does_token_look_special for added tokens not marked special.
bool looks_special(std::string_view t) {
  return (t.starts_with("<|") && t.ends_with("|>")) || (t.starts_with("<\xEF\xBD\x9C") && t.ends_with("\xEF\xBD\x9C>"));
}

std::string pre_name(const HfTokenizerSpec& spec) {
  if (!spec.split_pattern.empty()) {
    for (const auto& k : kKnownPatterns) {
      if (k.pattern == spec.split_pattern) return std::string(k.name);
    }
    return "";
  }
  // A lone ByteLevel pre-tokenizer with its regex is GPT-2's.
  const bool gpt2 = std::all_of(spec.pre_tokenizer.begin(), spec.pre_tokenizer.end(), [](const auto& s) {
    return s.kind == HfPreTokenizerStep::Kind::kSplit || s.kind == HfPreTokenizerStep::Kind::kPrefixSpace;
  });
  return gpt2 && !spec.pre_tokenizer.empty() ? "gpt-2" : "";
}

TokenType token_type(const Vocab& v, int32_t id, size_t base, const HfAddedToken* added) {
  const std::string& text = v.tokens[id].text;
  if (v.model == VocabModel::kSpm) {
    if (is_byte_token(text)) return TokenType::kByte;
    if (added != nullptr && added->special) return TokenType::kControl;
    return static_cast<size_t>(id) >= base && added != nullptr ? TokenType::kUserDefined : TokenType::kNormal;
  }
  if (added == nullptr) return TokenType::kNormal;
  return added->special || looks_special(text) ? TokenType::kControl : TokenType::kUserDefined;
}

Status fill_tokens(const HfTokenizerSpec& spec, Vocab* v) {
  const HfModelSpec& m = spec.model;
  size_t n = m.vocab.size();
  std::vector<const HfAddedToken*> added;
  for (const HfAddedToken& t : spec.added_tokens) n = std::max(n, static_cast<size_t>(t.id) + 1);
  added.assign(n, nullptr);
  v->tokens.resize(n);
  for (size_t id = 0; id < m.vocab.size(); ++id) v->tokens[id].text = m.vocab[id];
  for (const HfAddedToken& t : spec.added_tokens) {
    v->tokens[t.id].text = t.content;
    added[t.id] = &t;
  }
  v->token_to_id.reserve(n);
  for (size_t id = 0; id < n; ++id) {
    TokenData& t = v->tokens[id];
    if (t.text.empty()) {  // a hole in the ids: what llama.cpp's converter writes there
      t.text = fmt::format("[PAD{}]", id);
      t.type = TokenType::kUnused;
    } else {
      t.type = token_type(*v, static_cast<int32_t>(id), m.vocab.size(), added[id]);
    }
    if (m.kind == HfModelSpec::Kind::kUnigram) {
      t.score = id < m.scores.size() ? m.scores[id] : 0.0f;
    } else {
      t.score = v->model == VocabModel::kSpm ? kSpmScore : 0.0f;
    }
    v->token_to_id[t.text] = static_cast<int32_t>(id);
  }
  return ok_status();
}

// The id of a special token named by text in tokenizer_config.json, else `fallback`.
Result<int32_t> special_id(const Vocab& v, const std::string& text, int32_t fallback, std::string_view what) {
  if (text.empty()) return v.valid_id(fallback) ? fallback : -1;
  const int32_t id = v.find(text);
  if (id < 0) return invalid_argument(fmt::format("tokenizer_config.json: {} '{}' is not a token", what, text));
  return id;
}

Status set_special_ids(const HfTokenizerSpec& spec, const HfTokenizerConfig& c, Vocab* v) {
  const auto single = [](const std::vector<int32_t>& ids) { return ids.size() == 1 ? ids[0] : -1; };
  LLMS_ASSIGN_OR_RETURN(v->bos_id, special_id(*v, c.bos_token, c.bos_id >= 0 ? c.bos_id : single(spec.prefix_ids), "bos_token"));
  LLMS_ASSIGN_OR_RETURN(v->eos_id, special_id(*v, c.eos_token, c.eos_id >= 0 ? c.eos_id : single(spec.suffix_ids), "eos_token"));
  LLMS_ASSIGN_OR_RETURN(v->unk_id, special_id(*v, c.unk_token, spec.model.unk_id, "unk_token"));
  LLMS_ASSIGN_OR_RETURN(v->pad_id, special_id(*v, c.pad_token, -1, "pad_token"));
  return ok_status();
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_hf(const HfTokenizerSpec& spec, const HfTokenizerConfig& config) {
  std::unique_ptr<Tokenizer> tok(new Tokenizer());
  Vocab& v = tok->vocab_;
  v.model = spec.decoder.style == HfDecoderSpec::Style::kSentencePiece ? VocabModel::kSpm : VocabModel::kBpe;
  LLMS_RETURN_IF_ERROR(fill_tokens(spec, &v));
  v.merges = spec.model.merges;
  v.unigram = spec.model.kind == HfModelSpec::Kind::kUnigram;
  v.pre = v.model == VocabModel::kSpm ? "default" : pre_name(spec);
  v.pre_pattern = spec.split_pattern;
  LLMS_RETURN_IF_ERROR(set_special_ids(spec, config, &v));
  v.add_space_prefix = v.model == VocabModel::kSpm && spec.decoder.strip_leading_space;
  v.chat_template = config.chat_template;
  v.named_chat_templates = config.named_chat_templates;
  LLMS_RETURN_IF_ERROR(tok->init_hf(spec, config));
  return tok;
}

Status Tokenizer::init_hf(const HfTokenizerSpec& spec, const HfTokenizerConfig& config) {
  prefix_ids_ = spec.prefix_ids;
  suffix_ids_ = spec.suffix_ids;
  // LLaMA-family configs rebuild the post-processor from add_bos_token/add_eos_token.
  if (config.add_bos >= 0) prefix_ids_ = config.add_bos && vocab_.bos_id >= 0 ? std::vector<int32_t>{vocab_.bos_id} : std::vector<int32_t>{};
  if (config.add_eos >= 0) suffix_ids_ = config.add_eos && vocab_.eos_id >= 0 ? std::vector<int32_t>{vocab_.eos_id} : std::vector<int32_t>{};
  for (const int32_t id : prefix_ids_) {
    if (!vocab_.valid_id(id)) return invalid_argument(fmt::format("tokenizer.json: post_processor names token id {}, outside the vocabulary", id));
  }
  for (const int32_t id : suffix_ids_) {
    if (!vocab_.valid_id(id)) return invalid_argument(fmt::format("tokenizer.json: post_processor names token id {}, outside the vocabulary", id));
  }
  vocab_.add_bos = !prefix_ids_.empty();
  vocab_.add_bos_in_metadata = true;
  vocab_.add_eos = !suffix_ids_.empty();
  mark_end_of_generation();
  generation_ = config.generation;
  for (const int32_t id : config.generation.eos_token_ids) {
    if (vocab_.valid_id(id)) end_of_generation_[id] = 1;
  }
  LLMS_ASSIGN_OR_RETURN(hf_, HfEncoder::create(spec, vocab_));
  build_pieces();
  return ok_status();
}

}  // namespace llms
