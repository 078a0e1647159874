// tokenizer.json → HfTokenizerSpec: the model, added tokens, post-processor and decoder
// sections here; normalizers and pre-tokenizers in hf_components_json.cc.
#include <fmt/format.h>

#include "base/log.h"
#include "tokenizer/hf_components_json.h"
#include "tokenizer/hf_json.h"
#include "tokenizer/hf_tokenizer_spec.h"

namespace llms {

namespace {

using hfjson::Json;

// Larger vocabularies than any model has; ids past it are refused rather than allocated.
constexpr int32_t kMaxVocab = 1 << 24;
constexpr int kMaxDepth = 8;
constexpr std::string_view kSpmSpace = "\xE2\x96\x81";

Status set_token(int32_t id, std::string text, std::string_view where, std::vector<std::string>* vocab) {
  if (id >= kMaxVocab) return invalid_argument(fmt::format("{}: token id {} is too large", where, id));
  if (static_cast<size_t>(id) >= vocab->size()) vocab->resize(static_cast<size_t>(id) + 1);
  if (!(*vocab)[id].empty()) {
    return invalid_argument(fmt::format("{}: token id {} is given twice ('{}' and '{}')", where, id, (*vocab)[id], text));
  }
  if (text.empty()) return invalid_argument(fmt::format("{}: token id {} has an empty text", where, id));
  (*vocab)[id] = std::move(text);
  return ok_status();
}

Status parse_merges(const Json& model, HfModelSpec* m) {
  const Json* merges = hfjson::member(model, "merges");
  if (merges == nullptr || !merges->is_array()) return hfjson::type_error("model", "merges", "an array");
  m->merges.reserve(merges->size());
  for (size_t i = 0; i < merges->size(); ++i) {
    const Json& e = (*merges)[i];
    if (e.is_string()) {
      m->merges.push_back(e.get<std::string>());
    } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
      const auto left = e[0].get<std::string>();
      if (left.find(' ') != std::string::npos) {
        return unimplemented(fmt::format("model.merges[{}]: a token with a space ('{}') is not supported", i, left));
      }
      m->merges.push_back(left + " " + e[1].get<std::string>());
    } else {
      return invalid_argument(fmt::format("model.merges[{}]: expected \"left right\" or [\"left\", \"right\"]", i));
    }
    const std::string& s = m->merges.back();
    const size_t sp = s.find(' ', 1);
    if (sp == std::string::npos || sp + 1 >= s.size()) {
      return invalid_argument(fmt::format("model.merges[{}] = '{}' is not two tokens", i, s));
    }
  }
  return ok_status();
}

Result<int32_t> find_vocab_id(const std::vector<std::string>& vocab, const std::string& text, std::string_view what) {
  for (size_t id = 0; id < vocab.size(); ++id) {
    if (vocab[id] == text) return static_cast<int32_t>(id);
  }
  return invalid_argument(fmt::format("model.{} '{}' is not in the vocabulary", what, text));
}

Status parse_bpe(const Json& model, HfModelSpec* m) {
  m->kind = HfModelSpec::Kind::kBpe;
  LLMS_ASSIGN_OR_RETURN(const auto dropout, hfjson::get_opt_number(model, "dropout", "model"));
  if (dropout && *dropout != 0.0) {
    return unimplemented(fmt::format("model.dropout = {} is not supported (BPE dropout is a training aid)", *dropout));
  }
  const Json* vocab = hfjson::member(model, "vocab");
  if (vocab == nullptr || !vocab->is_object()) return hfjson::type_error("model", "vocab", "an object");
  for (const auto& [text, id_json] : vocab->items()) {
    LLMS_ASSIGN_OR_RETURN(const int32_t id, hfjson::to_id(id_json, fmt::format("model.vocab['{}']", text)));
    LLMS_RETURN_IF_ERROR(set_token(id, text, "model.vocab", &m->vocab));
  }
  LLMS_RETURN_IF_ERROR(parse_merges(model, m));
  LLMS_ASSIGN_OR_RETURN(m->byte_fallback, hfjson::get_bool(model, "byte_fallback", false, "model"));
  LLMS_ASSIGN_OR_RETURN(m->fuse_unk, hfjson::get_bool(model, "fuse_unk", false, "model"));
  LLMS_ASSIGN_OR_RETURN(m->ignore_merges, hfjson::get_bool(model, "ignore_merges", false, "model"));
  LLMS_ASSIGN_OR_RETURN(auto prefix, hfjson::get_opt_string(model, "continuing_subword_prefix", "model"));
  LLMS_ASSIGN_OR_RETURN(auto suffix, hfjson::get_opt_string(model, "end_of_word_suffix", "model"));
  m->continuing_subword_prefix = prefix.value_or("");
  m->end_of_word_suffix = suffix.value_or("");
  LLMS_ASSIGN_OR_RETURN(auto unk, hfjson::get_opt_string(model, "unk_token", "model"));
  if (unk) {
    LLMS_ASSIGN_OR_RETURN(m->unk_id, find_vocab_id(m->vocab, *unk, "unk_token"));
  }
  return ok_status();
}

Status parse_unigram(const Json& model, HfModelSpec* m) {
  m->kind = HfModelSpec::Kind::kUnigram;
  const Json* vocab = hfjson::member(model, "vocab");
  if (vocab == nullptr || !vocab->is_array()) return hfjson::type_error("model", "vocab", "an array of [piece, score]");
  if (vocab->size() >= static_cast<size_t>(kMaxVocab)) return invalid_argument("model.vocab: too many pieces");
  for (size_t i = 0; i < vocab->size(); ++i) {
    const Json& e = (*vocab)[i];
    if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number()) {
      return invalid_argument(fmt::format("model.vocab[{}]: expected [piece, score]", i));
    }
    LLMS_RETURN_IF_ERROR(set_token(static_cast<int32_t>(i), e[0].get<std::string>(), "model.vocab", &m->vocab));
    m->scores.push_back(static_cast<float>(e[1].get<double>()));
  }
  LLMS_ASSIGN_OR_RETURN(m->byte_fallback, hfjson::get_bool(model, "byte_fallback", false, "model"));
  LLMS_ASSIGN_OR_RETURN(const auto unk, hfjson::get_opt_int(model, "unk_id", "model"));
  if (unk) {
    if (*unk < 0 || *unk >= static_cast<int64_t>(m->vocab.size())) {
      return invalid_argument(fmt::format("model.unk_id = {} is outside the vocabulary", *unk));
    }
    m->unk_id = static_cast<int32_t>(*unk);
  }
  return ok_status();
}

Status parse_model(const Json& root, HfModelSpec* m) {
  const Json* model = hfjson::member(root, "model");
  if (model == nullptr || !model->is_object()) return hfjson::type_error("", "model", "an object");
  LLMS_ASSIGN_OR_RETURN(auto type, hfjson::get_opt_string(*model, "type", "model"));
  if (!type) {
    // Files written by old versions of the library have no "type"; the fields tell.
    const Json* vocab = hfjson::member(*model, "vocab");
    if (hfjson::member(*model, "merges") != nullptr) {
      type = "BPE";
    } else if (vocab != nullptr && vocab->is_array()) {
      type = "Unigram";
    } else {
      return invalid_argument("model: no \"type\", and the fields do not say which model it is");
    }
  }
  if (*type == "BPE") return parse_bpe(*model, m);
  if (*type == "Unigram") return parse_unigram(*model, m);
  return unimplemented(fmt::format("model: type '{}' is not supported (supported: BPE, Unigram)", *type));
}

Status parse_added_tokens(const Json& root, HfTokenizerSpec* spec) {
  const Json* list = hfjson::member(root, "added_tokens");
  if (list == nullptr) return ok_status();
  if (!list->is_array()) return hfjson::type_error("", "added_tokens", "an array");
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string where = fmt::format("added_tokens[{}]", i);
    const Json& e = (*list)[i];
    if (!e.is_object()) return invalid_argument(where + ": expected an object");
    HfAddedToken t;
    const Json* id = hfjson::member(e, "id");
    if (id == nullptr) return hfjson::type_error(where, "id", "a token id");
    LLMS_ASSIGN_OR_RETURN(t.id, hfjson::to_id(*id, where + ".id"));
    if (t.id >= kMaxVocab) return invalid_argument(fmt::format("{}: token id {} is too large", where, t.id));
    LLMS_ASSIGN_OR_RETURN(t.content, hfjson::get_string(e, "content", where));
    if (t.content.empty()) return invalid_argument(where + ".content is empty");
    LLMS_ASSIGN_OR_RETURN(t.special, hfjson::get_bool(e, "special", false, where));
    LLMS_ASSIGN_OR_RETURN(t.lstrip, hfjson::get_bool(e, "lstrip", false, where));
    LLMS_ASSIGN_OR_RETURN(t.rstrip, hfjson::get_bool(e, "rstrip", false, where));
    LLMS_ASSIGN_OR_RETURN(t.normalized, hfjson::get_bool(e, "normalized", !t.special, where));
    LLMS_ASSIGN_OR_RETURN(t.single_word, hfjson::get_bool(e, "single_word", false, where));
    spec->added_tokens.push_back(std::move(t));
  }
  return ok_status();
}

// TemplateProcessing's "single": special tokens around the one sequence "A".
Status parse_template(const Json& p, std::string_view where, HfTokenizerSpec* spec) {
  const Json* single = hfjson::member(p, "single");
  const Json* specials = hfjson::member(p, "special_tokens");
  if (single == nullptr || !single->is_array()) return hfjson::type_error(where, "single", "an array");
  bool seen_sequence = false;
  for (size_t i = 0; i < single->size(); ++i) {
    const std::string w = fmt::format("{}.single[{}]", where, i);
    const Json& item = (*single)[i];
    if (const Json* seq = hfjson::member(item, "Sequence"); seq != nullptr) {
      LLMS_ASSIGN_OR_RETURN(const std::string id, hfjson::get_string(*seq, "id", w + ".Sequence"));
      if (id != "A" || seen_sequence) return invalid_argument(fmt::format("{}: only one sequence \"A\" is supported", w));
      seen_sequence = true;
      continue;
    }
    const Json* tok = hfjson::member(item, "SpecialToken");
    if (tok == nullptr) return invalid_argument(w + ": expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
    LLMS_ASSIGN_OR_RETURN(const std::string name, hfjson::get_string(*tok, "id", w + ".SpecialToken"));
    const Json* entry = specials != nullptr ? hfjson::member(*specials, name) : nullptr;
    const Json* ids = entry != nullptr ? hfjson::member(*entry, "ids") : nullptr;
    if (ids == nullptr || !ids->is_array()) {
      return invalid_argument(fmt::format("{}: special token '{}' is not in special_tokens", w, name));
    }
    for (const Json& v : *ids) {
      LLMS_ASSIGN_OR_RETURN(const int32_t id, hfjson::to_id(v, fmt::format("{}.special_tokens['{}']", where, name)));
      (seen_sequence ? spec->suffix_ids : spec->prefix_ids).push_back(id);
    }
  }
  if (!seen_sequence) return invalid_argument(fmt::format("{}.single: no sequence \"A\"", where));
  return ok_status();
}

// RobertaProcessing and BertProcessing: "cls" before, "sep" after, each ["text", id].
Status parse_cls_sep(const Json& p, std::string_view where, HfTokenizerSpec* spec) {
  for (const char* key : {"cls", "sep"}) {
    const Json* v = hfjson::member(p, key);
    if (v == nullptr || !v->is_array() || v->size() != 2) return hfjson::type_error(where, key, "[text, id]");
    LLMS_ASSIGN_OR_RETURN(const int32_t id, hfjson::to_id((*v)[1], fmt::format("{}.{}", where, key)));
    (std::string_view(key) == "cls" ? spec->prefix_ids : spec->suffix_ids).push_back(id);
  }
  return ok_status();
}

Status parse_post_processor(const Json& p, std::string_view where, int depth, HfTokenizerSpec* spec) {
  if (depth > kMaxDepth) return invalid_argument(fmt::format("{}: sequences nested too deeply", where));
  if (!p.is_object()) return invalid_argument(fmt::format("{}: expected an object", where));
  LLMS_ASSIGN_OR_RETURN(const std::string type, hfjson::get_string(p, "type", where));
  spec->has_post_processor = true;
  if (type == "TemplateProcessing") return parse_template(p, where, spec);
  if (type == "RobertaProcessing" || type == "BertProcessing") return parse_cls_sep(p, where, spec);
  if (type == "ByteLevel") return ok_status();  // it only trims offsets
  if (type == "Sequence") {
    const Json* list = hfjson::member(p, "processors");
    if (list == nullptr || !list->is_array()) return hfjson::type_error(where, "processors", "an array");
    for (size_t i = 0; i < list->size(); ++i) {
      LLMS_RETURN_IF_ERROR(parse_post_processor((*list)[i], fmt::format("{}.processors[{}]", where, i), depth + 1, spec));
    }
    return ok_status();
  }
  return unimplemented(fmt::format(
      "{}: post-processor '{}' is not supported (supported: TemplateProcessing, RobertaProcessing, BertProcessing, "
      "ByteLevel, Sequence)",
      where, type));
}

// One decoder of a Sequence (or the decoder itself). `style_set` tracks whether a
// decoder already fixed the style, so that contradicting ones are refused.
Status parse_decoder_part(const Json& d, std::string_view where, bool* style_set, HfDecoderSpec* out) {
  LLMS_ASSIGN_OR_RETURN(const std::string type, hfjson::get_string(d, "type", where));
  auto set_style = [&](HfDecoderSpec::Style s) -> Status {
    if (*style_set && out->style != s) return unimplemented(fmt::format("{}: a decoder that mixes styles", where));
    out->style = s;
    *style_set = true;
    return ok_status();
  };
  if (type == "ByteLevel") return set_style(HfDecoderSpec::Style::kByteLevel);
  if (type == "ByteFallback" || type == "Fuse") return ok_status();  // what our decode does anyway
  if (type == "Metaspace") {
    LLMS_RETURN_IF_ERROR(metaspace_replacement(d, where).status());
    LLMS_ASSIGN_OR_RETURN(const auto prepend, parse_prepend_scheme(d, where));
    out->strip_leading_space = prepend != HfPreTokenizerStep::Prepend::kNever;
    return set_style(HfDecoderSpec::Style::kSentencePiece);
  }
  if (type == "Replace") {
    LLMS_ASSIGN_OR_RETURN(const std::string pattern, parse_pattern(d, where));
    LLMS_ASSIGN_OR_RETURN(const std::string content, hfjson::get_string(d, "content", where));
    if (pattern != kSpmSpace || content != " ") {
      return unimplemented(fmt::format("{}: only the decoder Replace '\xE2\x96\x81' → ' ' is supported", where));
    }
    return set_style(HfDecoderSpec::Style::kSentencePiece);
  }
  if (type == "Strip") {
    LLMS_ASSIGN_OR_RETURN(const std::string content, hfjson::get_string(d, "content", where));
    LLMS_ASSIGN_OR_RETURN(const auto start, hfjson::get_opt_int(d, "start", where));
    LLMS_ASSIGN_OR_RETURN(const auto stop, hfjson::get_opt_int(d, "stop", where));
    if (content != " " || start.value_or(0) != 1 || stop.value_or(0) != 0) {
      return unimplemented(fmt::format("{}: only the decoder Strip of one leading ' ' is supported", where));
    }
    out->strip_leading_space = true;
    return ok_status();
  }
  return unimplemented(fmt::format(
      "{}: decoder '{}' is not supported (supported: ByteLevel, Metaspace, and Sequences of Replace, ByteFallback, "
      "Fuse, Strip)",
      where, type));
}

Status parse_decoder(const Json& root, HfDecoderSpec* out) {
  const Json* d = hfjson::member(root, "decoder");
  if (d == nullptr) return unimplemented("decoder: a tokenizer.json without a decoder is not supported");
  if (!d->is_object()) return hfjson::type_error("", "decoder", "an object");
  bool style_set = false;
  LLMS_ASSIGN_OR_RETURN(const std::string type, hfjson::get_string(*d, "type", "decoder"));
  if (type == "Sequence") {
    const Json* list = hfjson::member(*d, "decoders");
    if (list == nullptr || !list->is_array()) return hfjson::type_error("decoder", "decoders", "an array");
    for (size_t i = 0; i < list->size(); ++i) {
      const std::string w = fmt::format("decoder.decoders[{}]", i);
      if (!(*list)[i].is_object()) return invalid_argument(w + ": expected an object");
      LLMS_RETURN_IF_ERROR(parse_decoder_part((*list)[i], w, &style_set, out));
    }
  } else {
    LLMS_RETURN_IF_ERROR(parse_decoder_part(*d, "decoder", &style_set, out));
  }
  if (!style_set) return unimplemented("decoder: it neither reads the byte-level alphabet nor '\xE2\x96\x81' spaces");
  return ok_status();
}

Status check_consistent(const HfTokenizerSpec& spec) {
  const bool byte_decoder = spec.decoder.style == HfDecoderSpec::Style::kByteLevel;
  if (spec.byte_level != byte_decoder) {
    return unimplemented(byte_decoder ? "a ByteLevel decoder without a ByteLevel pre-tokenizer is not supported"
                                      : "a ByteLevel pre-tokenizer without a ByteLevel decoder is not supported");
  }
  if (spec.model.vocab.empty()) return invalid_argument("model.vocab is empty");
  if (spec.byte_level && spec.model.kind != HfModelSpec::Kind::kBpe) {
    return unimplemented("a ByteLevel pre-tokenizer over a Unigram model is not supported");
  }
  return ok_status();
}

Status parse_root(const Json& root, HfTokenizerSpec* spec) {
  if (!root.is_object()) return invalid_argument("expected a JSON object");
  LLMS_RETURN_IF_ERROR(parse_model(root, &spec->model));
  LLMS_RETURN_IF_ERROR(parse_added_tokens(root, spec));
  if (const Json* n = hfjson::member(root, "normalizer")) LLMS_RETURN_IF_ERROR(parse_normalizer(*n, &spec->normalizer));
  if (const Json* p = hfjson::member(root, "pre_tokenizer")) LLMS_RETURN_IF_ERROR(parse_pre_tokenizer(*p, spec));
  if (const Json* p = hfjson::member(root, "post_processor")) {
    LLMS_RETURN_IF_ERROR(parse_post_processor(*p, "post_processor", 0, spec));
  }
  LLMS_RETURN_IF_ERROR(parse_decoder(root, &spec->decoder));
  if (hfjson::member(root, "truncation") != nullptr) log_warn("tokenizer.json: 'truncation' is ignored");
  return check_consistent(*spec);
}

}  // namespace

Result<HfTokenizerSpec> parse_tokenizer_json(std::string_view text) {
  LLMS_ASSIGN_OR_RETURN(const Json root, hfjson::parse(text, "tokenizer.json"));
  HfTokenizerSpec spec;
  const Status s = parse_root(root, &spec);
  if (!s.ok()) return Status(s.code(), "tokenizer.json: " + s.message());
  return spec;
}

}  // namespace llms
