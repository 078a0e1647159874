#include "tokenizer/load_tokenizer.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "io/gguf_file.h"
#include "tokenizer/hf_json.h"

namespace llms {

namespace {

namespace fs = std::filesystem;
using hfjson::Json;

// Larger than any real tokenizer.json (the largest are ~20 MB); refused rather than read.
constexpr uintmax_t kMaxFileBytes = 512ull << 20;

// The file's text; an empty optional when it does not exist.
Result<std::optional<std::string>> read_optional(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::optional<std::string>();
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) return not_found(fmt::format("{}: {}", path.string(), ec.message()));
  if (size > kMaxFileBytes) return invalid_argument(fmt::format("{}: {} bytes is too large", path.string(), size));
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(fmt::format("cannot open '{}'", path.string()));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return data_loss(fmt::format("error reading '{}'", path.string()));
  return std::optional<std::string>(ss.str());
}

Result<std::optional<Json>> read_json(const fs::path& path) {
  LLMS_ASSIGN_OR_RETURN(auto text, read_optional(path));
  if (!text) return std::optional<Json>();
  auto j = hfjson::parse(*text, path.filename().string());
  if (!j.ok()) return j.status();
  if (!j->is_object()) return invalid_argument(fmt::format("{}: expected a JSON object", path.filename().string()));
  return std::optional<Json>(std::move(j).value());
}

// A special token in tokenizer_config.json or special_tokens_map.json: a string, or an
// AddedToken object {"content": ...}.
Result<std::string> token_text(const Json& obj, const std::string& key, std::string_view file) {
  const Json* v = hfjson::member(obj, key);
  if (v == nullptr) return std::string();
  if (v->is_string()) return v->get<std::string>();
  if (v->is_object()) return hfjson::get_string(*v, "content", fmt::format("{}.{}", file, key));
  return hfjson::type_error(file, key, "a string or {\"content\": ...}");
}

Status read_special_texts(const Json& obj, std::string_view file, HfTokenizerConfig* c) {
  for (auto [key, out] : {std::pair{"bos_token", &c->bos_token}, std::pair{"eos_token", &c->eos_token},
                          std::pair{"unk_token", &c->unk_token}, std::pair{"pad_token", &c->pad_token}}) {
    if (!out->empty()) continue;  // tokenizer_config.json, read first, wins
    LLMS_ASSIGN_OR_RETURN(*out, token_text(obj, key, file));
  }
  return ok_status();
}

Status read_chat_templates(const Json& obj, HfTokenizerConfig* c) {
  const Json* t = hfjson::member(obj, "chat_template");
  if (t == nullptr) return ok_status();
  if (t->is_string()) {
    c->chat_template = t->get<std::string>();
    return ok_status();
  }
  if (!t->is_array()) return hfjson::type_error("tokenizer_config.json", "chat_template", "a string or a list");
  for (size_t i = 0; i < t->size(); ++i) {
    const std::string where = fmt::format("tokenizer_config.json.chat_template[{}]", i);
    LLMS_ASSIGN_OR_RETURN(std::string name, hfjson::get_string((*t)[i], "name", where));
    LLMS_ASSIGN_OR_RETURN(std::string text, hfjson::get_string((*t)[i], "template", where));
    if (name == "default") {
      c->chat_template = std::move(text);
    } else {
      c->named_chat_templates.emplace_back(std::move(name), std::move(text));
    }
  }
  return ok_status();
}

Status read_tokenizer_config(const Json& obj, HfTokenizerConfig* c) {
  constexpr std::string_view kFile = "tokenizer_config.json";
  LLMS_RETURN_IF_ERROR(read_special_texts(obj, kFile, c));
  LLMS_RETURN_IF_ERROR(read_chat_templates(obj, c));
  LLMS_ASSIGN_OR_RETURN(auto cls, hfjson::get_opt_string(obj, "tokenizer_class", kFile));
  // LLaMA and Gemma tokenizers rebuild their post-processor from these two flags.
  if (cls && (cls->starts_with("Llama") || cls->starts_with("CodeLlama") || cls->starts_with("Gemma"))) {
    for (auto [key, out] : {std::pair{"add_bos_token", &c->add_bos}, std::pair{"add_eos_token", &c->add_eos}}) {
      if (hfjson::member(obj, key) == nullptr) continue;
      LLMS_ASSIGN_OR_RETURN(const bool v, hfjson::get_bool(obj, key, false, kFile));
      *out = v ? 1 : 0;
    }
  }
  return ok_status();
}

// eos_token_id / bos_token_id: an id or a list of ids (the first is "the" one).
Result<std::vector<int32_t>> read_ids(const Json& obj, std::string_view key, std::string_view file) {
  std::vector<int32_t> ids;
  const Json* v = hfjson::member(obj, key);
  if (v == nullptr) return ids;
  const std::string where = fmt::format("{}.{}", file, key);
  if (v->is_array()) {
    for (const Json& e : *v) {
      LLMS_ASSIGN_OR_RETURN(const int32_t id, hfjson::to_id(e, where));
      ids.push_back(id);
    }
  } else {
    LLMS_ASSIGN_OR_RETURN(const int32_t id, hfjson::to_id(*v, where));
    ids.push_back(id);
  }
  return ids;
}

Status read_config_ids(const Json& obj, std::string_view file, HfTokenizerConfig* c) {
  LLMS_ASSIGN_OR_RETURN(const auto bos, read_ids(obj, "bos_token_id", file));
  LLMS_ASSIGN_OR_RETURN(const auto eos, read_ids(obj, "eos_token_id", file));
  if (!bos.empty()) c->bos_id = bos[0];
  if (!eos.empty()) c->eos_id = eos[0];
  return ok_status();
}

Result<GenerationDefaults> generation_defaults(const Json& obj) {
  constexpr std::string_view kFile = "generation_config.json";
  GenerationDefaults d;
  LLMS_ASSIGN_OR_RETURN(d.eos_token_ids, read_ids(obj, "eos_token_id", kFile));
  LLMS_ASSIGN_OR_RETURN(const auto temperature, hfjson::get_opt_number(obj, "temperature", kFile));
  LLMS_ASSIGN_OR_RETURN(const auto top_p, hfjson::get_opt_number(obj, "top_p", kFile));
  LLMS_ASSIGN_OR_RETURN(const auto top_k, hfjson::get_opt_int(obj, "top_k", kFile));
  LLMS_ASSIGN_OR_RETURN(const bool do_sample, hfjson::get_bool(obj, "do_sample", true, kFile));
  // transformers samples only with do_sample; without it decoding is greedy.
  if (!do_sample) {
    d.temperature = 0.0f;
  } else if (temperature) {
    if (*temperature < 0.0 || *temperature > 2.0) {
      return invalid_argument(fmt::format("{}: temperature {} is outside [0, 2]", kFile, *temperature));
    }
    d.temperature = static_cast<float>(*temperature);
  }
  if (top_p) {
    if (*top_p <= 0.0 || *top_p > 1.0) return invalid_argument(fmt::format("{}: top_p {} is outside (0, 1]", kFile, *top_p));
    d.top_p = static_cast<float>(*top_p);
  }
  if (top_k) {
    if (*top_k < 0 || *top_k > INT32_MAX) return invalid_argument(fmt::format("{}: top_k {} is out of range", kFile, *top_k));
    d.top_k = static_cast<int32_t>(*top_k);
  }
  return d;
}

}  // namespace

Result<GenerationDefaults> read_generation_config(const std::string& dir) {
  LLMS_ASSIGN_OR_RETURN(auto gen, read_json(fs::path(dir) / "generation_config.json"));
  if (!gen) return GenerationDefaults{};
  return generation_defaults(*gen);
}

Result<HfTokenizerConfig> read_hf_tokenizer_config(const std::string& dir) {
  const fs::path d(dir);
  HfTokenizerConfig c;
  LLMS_ASSIGN_OR_RETURN(auto tc, read_json(d / "tokenizer_config.json"));
  if (tc) LLMS_RETURN_IF_ERROR(read_tokenizer_config(*tc, &c));
  LLMS_ASSIGN_OR_RETURN(auto stm, read_json(d / "special_tokens_map.json"));
  if (stm) LLMS_RETURN_IF_ERROR(read_special_texts(*stm, "special_tokens_map.json", &c));
  LLMS_ASSIGN_OR_RETURN(auto jinja, read_optional(d / "chat_template.jinja"));
  if (jinja) c.chat_template = std::move(*jinja);  // the newer form; it takes precedence
  LLMS_ASSIGN_OR_RETURN(auto config, read_json(d / "config.json"));
  if (config) LLMS_RETURN_IF_ERROR(read_config_ids(*config, "config.json", &c));
  LLMS_ASSIGN_OR_RETURN(auto gen, read_json(d / "generation_config.json"));
  if (gen) {
    LLMS_RETURN_IF_ERROR(read_config_ids(*gen, "generation_config.json", &c));
    LLMS_ASSIGN_OR_RETURN(c.generation, generation_defaults(*gen));
  }
  return c;
}

Result<std::unique_ptr<Tokenizer>> load_hf_tokenizer(const std::string& dir) {
  const fs::path d(dir);
  LLMS_ASSIGN_OR_RETURN(auto text, read_optional(d / "tokenizer.json"));
  if (!text) {
    std::error_code ec;
    const bool spm = fs::exists(d / "tokenizer.model", ec);
    return not_found(fmt::format("{} has no tokenizer.json{}", dir,
                                 spm ? " (a SentencePiece tokenizer.model alone is not supported; convert it with "
                                       "transformers' LlamaTokenizerFast, which writes tokenizer.json)"
                                     : ""));
  }
  auto spec = parse_tokenizer_json(*text);
  if (!spec.ok()) return spec.status().with_context(dir);
  auto config = read_hf_tokenizer_config(dir);
  if (!config.ok()) return config.status().with_context(dir);
  auto tok = Tokenizer::from_hf(*spec, *config);
  if (!tok.ok()) return tok.status().with_context(dir);
  return tok;
}

Result<std::unique_ptr<Tokenizer>> load_tokenizer(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return load_hf_tokenizer(path);
  auto file = GgufFile::open(path);
  if (!file.ok()) return file.status();
  auto tok = Tokenizer::from_gguf(*file);
  if (!tok.ok()) return tok.status().with_context(path);
  return tok;  // the tokenizer keeps no reference to the file
}

}  // namespace llms
