#include "tokenizer/chat_template.h"

#include <fmt/format.h>

#include <array>

#include "base/log.h"
#include "tokenizer/chat_formats.h"
#include "tokenizer/jinja_template.h"

namespace llms {

namespace {

struct FamilyInfo {
  ChatTemplateKind kind;
  std::string_view name;
  std::string_view bos;  // defaults when the caller names no tokens
  std::string_view eos;
};

constexpr std::array<FamilyInfo, 13> kFamilies = {{
    {ChatTemplateKind::kChatMl, "chatml", "", "<|im_end|>"},
    {ChatTemplateKind::kLlama2, "llama2", "<s>", "</s>"},
    {ChatTemplateKind::kLlama3, "llama3", "<|begin_of_text|>", "<|eot_id|>"},
    {ChatTemplateKind::kMistralV1, "mistral-v1", "<s>", "</s>"},
    {ChatTemplateKind::kMistralV3, "mistral-v3", "<s>", "</s>"},
    {ChatTemplateKind::kMistralV3Tekken, "mistral-v3-tekken", "<s>", "</s>"},
    {ChatTemplateKind::kMistralV7, "mistral-v7", "<s>", "</s>"},
    {ChatTemplateKind::kZephyr, "zephyr", "<s>", "</s>"},
    {ChatTemplateKind::kPhi3, "phi3", "<s>", "<|endoftext|>"},
    {ChatTemplateKind::kGemma, "gemma", "<bos>", "<eos>"},
    {ChatTemplateKind::kDeepseek, "deepseek", "<｜begin▁of▁sentence｜>", "<|EOT|>"},
    {ChatTemplateKind::kDeepseek2, "deepseek2", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"},
    {ChatTemplateKind::kDeepseek3, "deepseek3", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"},
}};

const FamilyInfo& info(ChatTemplateKind kind) { return kFamilies[static_cast<size_t>(kind)]; }

std::string names_list() { return fmt::format("{}", fmt::join(chat_template_names(), ", ")); }

// Recognises a Jinja source by the markers only its family writes. Order matters:
// several families share "[INST]" or "<|assistant|>".
bool detect_from_source(std::string_view src, ChatTemplateKind* kind) {
  const auto has = [&](std::string_view marker) { return src.find(marker) != std::string_view::npos; };
  if (has("<|im_start|>")) {
    *kind = ChatTemplateKind::kChatMl;
  } else if (has("<|start_header_id|>") && has("<|end_header_id|>")) {
    *kind = ChatTemplateKind::kLlama3;
  } else if (has("[INST]")) {
    if (has("[SYSTEM_PROMPT]")) {
      *kind = ChatTemplateKind::kMistralV7;
    } else if (has("<<SYS>>")) {
      *kind = ChatTemplateKind::kLlama2;
    } else if (has("[AVAILABLE_TOOLS]")) {
      const bool tight = has("\"[INST]\" +") || has("'[INST]' +");
      *kind = tight ? ChatTemplateKind::kMistralV3Tekken : ChatTemplateKind::kMistralV3;
    } else {
      *kind = ChatTemplateKind::kMistralV1;
    }
  } else if (has("<|assistant|>") && has("<|end|>")) {
    *kind = ChatTemplateKind::kPhi3;
  } else if (has("<|user|>") && has("<|assistant|>")) {
    *kind = ChatTemplateKind::kZephyr;
  } else if (has("<start_of_turn>")) {
    *kind = ChatTemplateKind::kGemma;
  } else if (has("### Instruction:") && has("<|EOT|>")) {
    *kind = ChatTemplateKind::kDeepseek;
  } else if (has("<｜User｜>") && has("<｜Assistant｜>")) {
    *kind = ChatTemplateKind::kDeepseek3;
  } else if (has("'User: '") && has("'Assistant: '")) {
    *kind = ChatTemplateKind::kDeepseek2;
  } else {
    return false;
  }
  return true;
}

}  // namespace

std::vector<std::string_view> chat_template_names() {
  std::vector<std::string_view> names;
  for (const auto& f : kFamilies) names.push_back(f.name);
  return names;
}

std::string_view chat_template_name(ChatTemplateKind kind) { return info(kind).name; }

Result<ChatTemplateKind> detect_chat_template(std::string_view name_or_source) {
  for (const auto& f : kFamilies) {
    if (name_or_source == f.name) return f.kind;
  }
  if (name_or_source == "mistral") return ChatTemplateKind::kMistralV1;
  ChatTemplateKind kind;
  if (detect_from_source(name_or_source, &kind)) return kind;
  const bool looks_like_name =
      name_or_source.size() < 40 && name_or_source.find_first_of("{}%<") == std::string_view::npos;
  if (looks_like_name) {
    return invalid_argument(
        fmt::format("unknown chat template name '{}'; --chat-template accepts: {}", name_or_source, names_list()));
  }
  return invalid_argument(fmt::format(
      "the model's chat template is not one of the supported families; choose one with --chat-template NAME ({})",
      names_list()));
}

Result<std::string> render_chat_template(ChatTemplateKind kind, const std::vector<ChatMessage>& msgs,
                                         bool add_generation_prompt, const ChatTemplateTokens& tokens) {
  const FamilyInfo& f = info(kind);
  const chat::Tokens t{tokens.bos.empty() ? std::string(f.bos) : tokens.bos,
                       tokens.eos.empty() ? std::string(f.eos) : tokens.eos};
  const bool gen = add_generation_prompt;
  switch (kind) {
    case ChatTemplateKind::kChatMl: return chat::render_chatml(msgs, gen, t);
    case ChatTemplateKind::kLlama2: return chat::render_llama2(msgs, gen, t);
    case ChatTemplateKind::kLlama3: return chat::render_llama3(msgs, gen, t);
    case ChatTemplateKind::kMistralV1: return chat::render_mistral_v1(msgs, gen, t);
    case ChatTemplateKind::kMistralV3: return chat::render_mistral_v3(msgs, gen, t, /*tekken=*/false);
    case ChatTemplateKind::kMistralV3Tekken: return chat::render_mistral_v3(msgs, gen, t, /*tekken=*/true);
    case ChatTemplateKind::kMistralV7: return chat::render_mistral_v7(msgs, gen, t);
    case ChatTemplateKind::kZephyr: return chat::render_zephyr(msgs, gen, t);
    case ChatTemplateKind::kPhi3: return chat::render_phi3(msgs, gen, t);
    case ChatTemplateKind::kGemma: return chat::render_gemma(msgs, gen, t);
    case ChatTemplateKind::kDeepseek: return chat::render_deepseek(msgs, gen, t);
    case ChatTemplateKind::kDeepseek2: return chat::render_deepseek2(msgs, gen, t);
    case ChatTemplateKind::kDeepseek3: return chat::render_deepseek3(msgs, gen, t);
  }
  return internal_error("unhandled chat template kind");
}

Result<std::string> apply_chat_template(const std::string& template_name_or_jinja_source,
                                        const std::vector<ChatMessage>& msgs, bool add_generation_prompt,
                                        const ChatTemplateTokens& tokens, const nlohmann::ordered_json& tools) {
  if (!is_family_name(template_name_or_jinja_source)) {
    auto parsed = parse_chat_template_cached(template_name_or_jinja_source);
    if (parsed.ok()) return parsed->render(chat_template_context(msgs, add_generation_prompt, tokens, tools));
  }
  LLMS_ASSIGN_OR_RETURN(const ChatTemplateKind kind, detect_chat_template(template_name_or_jinja_source));
  return render_chat_template(kind, msgs, add_generation_prompt, tokens);
}

Result<std::string> apply_model_chat_template(const Tokenizer& tok, const std::vector<ChatMessage>& msgs,
                                              bool add_generation_prompt, const std::string& override_name,
                                              const nlohmann::ordered_json& tools) {
  const std::string& source = override_name.empty() ? tok.chat_template() : override_name;
  if (source.empty()) {
    return invalid_argument(
        fmt::format("the model file has no tokenizer.chat_template; choose a template with --chat-template NAME ({})",
                    names_list()));
  }
  ChatTemplateTokens tokens;
  tokens.bos = tok.token_text(tok.bos_id());
  tokens.eos = tok.token_text(tok.eos_id());
  return apply_chat_template(source, msgs, add_generation_prompt, tokens, tools);
}

std::vector<int32_t> encode_chat_prompt(const Tokenizer& tok, std::string_view prompt) {
  const std::string& bos = tok.token_text(tok.bos_id());
  const bool has_bos = !bos.empty() && prompt.substr(0, bos.size()) == bos;
  EncodeOptions opts;
  opts.parse_special = true;
  opts.add_bos = !has_bos;
  return tok.encode(prompt, opts);
}

bool is_family_name(std::string_view name) {
  if (name == "mistral") return true;
  for (const auto& f : kFamilies) {
    if (name == f.name) return true;
  }
  return false;
}

namespace {

// A Jinja source the interpreter cannot run falls back to its family, said once here.
Status check_jinja_source(const std::string& source, const char* whose) {
  auto parsed = parse_chat_template_cached(source);
  if (parsed.ok()) {
    log_info("chat template: {} Jinja template, interpreted", whose);
    return ok_status();
  }
  auto kind = detect_chat_template(source);
  if (!kind.ok()) {
    return invalid_argument(fmt::format("{} ({}), and it is not one of the hand-written families either: {}",
                                        parsed.status().message(), whose, kind.status().message()));
  }
  log_warn("{}; {} template is rendered as the hand-written family '{}' instead", parsed.status().message(), whose,
           chat_template_name(*kind));
  return ok_status();
}

}  // namespace

Result<std::string> resolve_chat_template(const std::string& configured, const Tokenizer& tok) {
  if (configured == kPlainChatTemplate) return configured;
  if (!configured.empty()) {
    if (is_family_name(configured)) return configured;
    auto kind = detect_chat_template(configured);
    const bool looks_like_jinja = configured.find_first_of("{}%") != std::string::npos;
    if (!kind.ok() && !looks_like_jinja) return invalid_argument("chat_template: " + kind.status().message());
    if (Status s = check_jinja_source(configured, "the configured"); !s.ok()) {
      return invalid_argument("chat_template: " + s.message());
    }
    return configured;
  }
  if (tok.chat_template().empty()) {
    log_warn("the model has no chat template: chat requests use \"plain\" (message texts joined); "
             "choose one with --chat-template");
    return std::string(kPlainChatTemplate);
  }
  if (Status s = check_jinja_source(tok.chat_template(), "the model's"); !s.ok()) {
    // Completions still work; chat requests answer with this error until a template is chosen.
    log_warn("{}; chat requests will fail: choose a template with --chat-template NAME", s.message());
  }
  return std::string();
}

}  // namespace llms
