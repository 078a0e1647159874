#include "tokenizer/vocab.h"

#include <fmt/format.h>

#include "base/log.h"

namespace llms {

namespace {

constexpr std::string_view kModelKey = "tokenizer.ggml.model";
constexpr std::string_view kTokensKey = "tokenizer.ggml.tokens";

// Reads an optional special-token id. Converters write UINT32_MAX (or another id past
// the end) for "none"; that is not an error, the id is just absent.
Status read_special_id(const GgufFile& file, std::string_view key, int32_t num_tokens, int32_t* id) {
  if (!file.has(key)) return ok_status();
  auto u = file.get_uint(key);
  if (!u.ok()) {
    // A few writers store "none" as a signed -1.
    auto i = file.get_int(key);
    if (i.ok() && *i < 0) {
      *id = -1;
      return ok_status();
    }
    return u.status();
  }
  const uint64_t v = *u;
  if (v >= static_cast<uint64_t>(num_tokens)) {
    if (v != 0xFFFFFFFFull) log_debug("{} = {} is outside the vocabulary; treated as absent", key, v);
    *id = -1;
    return ok_status();
  }
  *id = static_cast<int32_t>(v);
  return ok_status();
}

Status read_token_arrays(const GgufFile& file, Vocab* vocab) {
  LLMS_ASSIGN_OR_RETURN(std::vector<std::string> texts, file.get_string_array(kTokensKey));
  if (texts.empty()) return data_loss(fmt::format("{} is empty", kTokensKey));
  if (texts.size() > static_cast<size_t>(INT32_MAX)) return data_loss(fmt::format("{} is too long", kTokensKey));
  const size_t n = texts.size();

  std::vector<float> scores;
  if (file.has("tokenizer.ggml.scores")) {
    LLMS_ASSIGN_OR_RETURN(scores, file.get_f32_array("tokenizer.ggml.scores"));
    if (scores.size() != n) {
      return data_loss(fmt::format("tokenizer.ggml.scores has {} entries but there are {} tokens", scores.size(), n));
    }
  }
  std::vector<int32_t> types;
  if (file.has("tokenizer.ggml.token_type")) {
    LLMS_ASSIGN_OR_RETURN(types, file.get_i32_array("tokenizer.ggml.token_type"));
    if (types.size() != n) {
      return data_loss(
          fmt::format("tokenizer.ggml.token_type has {} entries but there are {} tokens", types.size(), n));
    }
  }

  vocab->tokens.resize(n);
  vocab->token_to_id.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    TokenData& t = vocab->tokens[i];
    t.text = std::move(texts[i]);
    t.score = scores.empty() ? 0.0f : scores[i];
    const int32_t type = types.empty() ? 1 : types[i];
    // Unknown type values are treated like undefined ones (decoded like normal text).
    t.type = (type >= 0 && type <= 6) ? static_cast<TokenType>(type) : TokenType::kUndefined;
    if (!t.text.empty()) vocab->token_to_id[t.text] = static_cast<int32_t>(i);
  }
  return ok_status();
}

Status read_special_ids(const GgufFile& file, Vocab* vocab) {
  const int32_t n = vocab->size();
  if (vocab->model == VocabModel::kSpm) {
    // SentencePiece LLaMA defaults, used by old files that do not name them.
    if (n > 2) {
      vocab->unk_id = 0;
      vocab->bos_id = 1;
      vocab->eos_id = 2;
    }
  }
  LLMS_RETURN_IF_ERROR(read_special_id(file, "tokenizer.ggml.bos_token_id", n, &vocab->bos_id));
  LLMS_RETURN_IF_ERROR(read_special_id(file, "tokenizer.ggml.eos_token_id", n, &vocab->eos_id));
  LLMS_RETURN_IF_ERROR(read_special_id(file, "tokenizer.ggml.unknown_token_id", n, &vocab->unk_id));
  // The misspelling is the key's real name in the GGUF specification.
  LLMS_RETURN_IF_ERROR(read_special_id(file, "tokenizer.ggml.seperator_token_id", n, &vocab->sep_id));
  LLMS_RETURN_IF_ERROR(read_special_id(file, "tokenizer.ggml.padding_token_id", n, &vocab->pad_id));
  LLMS_RETURN_IF_ERROR(read_special_id(file, "tokenizer.ggml.eot_token_id", n, &vocab->eot_id));
  LLMS_RETURN_IF_ERROR(read_special_id(file, "tokenizer.ggml.eom_token_id", n, &vocab->eom_id));
  return ok_status();
}

}  // namespace

int32_t Vocab::find(std::string_view text) const {
  const auto it = token_to_id.find(text);
  return it == token_to_id.end() ? -1 : it->second;
}

Result<Vocab> Vocab::from_gguf(const GgufFile& file) {
  Vocab vocab;
  auto model = file.get_string(kModelKey);
  if (!model.ok()) {
    return Status(model.status().code(), fmt::format("the file has no usable tokenizer: {}", model.status().message()));
  }
  if (*model == "llama") {
    vocab.model = VocabModel::kSpm;
  } else if (*model == "gpt2") {
    vocab.model = VocabModel::kBpe;
  } else {
    return unimplemented(
        fmt::format("{} = '{}' is not supported (supported: 'llama' for SentencePiece, 'gpt2' for byte-level BPE)",
                    kModelKey, *model));
  }
  LLMS_ASSIGN_OR_RETURN(vocab.pre, file.get_string_or("tokenizer.ggml.pre", ""));
  LLMS_RETURN_IF_ERROR(read_token_arrays(file, &vocab));
  if (vocab.model == VocabModel::kBpe) {
    if (!file.has("tokenizer.ggml.merges")) {
      return data_loss("tokenizer.ggml.merges is missing (a byte-level BPE vocabulary needs its merges)");
    }
    LLMS_ASSIGN_OR_RETURN(vocab.merges, file.get_string_array("tokenizer.ggml.merges"));
  }
  LLMS_RETURN_IF_ERROR(read_special_ids(file, &vocab));

  const bool spm = vocab.model == VocabModel::kSpm;
  vocab.add_bos_in_metadata = file.has("tokenizer.ggml.add_bos_token");
  LLMS_ASSIGN_OR_RETURN(vocab.add_bos, file.get_bool_or("tokenizer.ggml.add_bos_token", spm));
  LLMS_ASSIGN_OR_RETURN(vocab.add_eos, file.get_bool_or("tokenizer.ggml.add_eos_token", false));
  LLMS_ASSIGN_OR_RETURN(vocab.add_space_prefix, file.get_bool_or("tokenizer.ggml.add_space_prefix", spm));
  LLMS_ASSIGN_OR_RETURN(vocab.chat_template, file.get_string_or("tokenizer.chat_template", ""));
  return vocab;
}

}  // namespace llms
