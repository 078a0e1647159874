#include "chat/chat_template.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "base/log.h"
#include "chat/formats/format.h"
#include "chat/jinja_template.h"

namespace llms {

namespace {

std::string names_list() { return fmt::format("{}", fmt::join(chat_template_names(), ", ")); }

// The family `name` (or its alias) names, or null.
const chat::TemplateFamily* by_name(std::string_view name) {
  for (const chat::TemplateFamily* f : chat::template_families()) {
    if (name == f->name || (!f->alias.empty() && name == f->alias)) return f;
  }
  return nullptr;
}

// Recognises a Jinja source by the markers only its family writes.
const chat::TemplateFamily* detect_from_source(std::string_view src) {
  for (const chat::TemplateFamily* f : chat::template_families()) {
    if (f->matches(src)) return f;
  }
  return nullptr;
}

}  // namespace

std::vector<std::string_view> chat_template_names() {
  std::vector<std::pair<ChatTemplateKind, std::string_view>> families;
  for (const chat::TemplateFamily* f : chat::template_families()) families.emplace_back(f->kind, f->name);
  std::sort(families.begin(), families.end());
  std::vector<std::string_view> names;
  for (const auto& f : families) names.push_back(f.second);
  return names;
}

std::string_view chat_template_name(ChatTemplateKind kind) { return chat::template_family(kind).name; }

Result<ChatTemplateKind> detect_chat_template(std::string_view name_or_source) {
  if (const chat::TemplateFamily* f = by_name(name_or_source)) return f->kind;
  if (const chat::TemplateFamily* f = detect_from_source(name_or_source)) return f->kind;
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
  const chat::TemplateFamily& f = chat::template_family(kind);
  const chat::Tokens t{tokens.bos.empty() ? std::string(f.bos) : tokens.bos,
                       tokens.eos.empty() ? std::string(f.eos) : tokens.eos};
  return f.render(msgs, add_generation_prompt, t);
}

Result<std::string> apply_chat_template(const std::string& template_name_or_jinja_source,
                                        const std::vector<ChatMessage>& msgs, bool add_generation_prompt,
                                        const ChatTemplateTokens& tokens, const nlohmann::ordered_json& tools,
                                        const nlohmann::ordered_json& kwargs) {
  if (!is_family_name(template_name_or_jinja_source)) {
    auto parsed = parse_chat_template_cached(template_name_or_jinja_source);
    if (parsed.ok()) return parsed->render(chat_template_context(msgs, add_generation_prompt, tokens, tools, kwargs));
  }
  LLMS_ASSIGN_OR_RETURN(const ChatTemplateKind kind, detect_chat_template(template_name_or_jinja_source));
  return render_chat_template(kind, msgs, add_generation_prompt, tokens);
}

Result<std::string> apply_model_chat_template(const Tokenizer& tok, const std::vector<ChatMessage>& msgs,
                                              bool add_generation_prompt, const std::string& override_name,
                                              const nlohmann::ordered_json& tools, const nlohmann::ordered_json& kwargs) {
  const std::string& source = override_name.empty() ? tok.chat_template() : override_name;
  if (source.empty()) {
    return invalid_argument(
        fmt::format("the model file has no tokenizer.chat_template; choose a template with --chat-template NAME ({})",
                    names_list()));
  }
  ChatTemplateTokens tokens;
  tokens.bos = tok.token_text(tok.bos_id());
  tokens.eos = tok.token_text(tok.eos_id());
  return apply_chat_template(source, msgs, add_generation_prompt, tokens, tools, kwargs);
}

std::vector<int32_t> encode_chat_prompt(const Tokenizer& tok, std::string_view prompt) {
  const std::string& bos = tok.token_text(tok.bos_id());
  const bool has_bos = !bos.empty() && prompt.substr(0, bos.size()) == bos;
  EncodeOptions opts;
  opts.parse_special = true;
  opts.add_bos = !has_bos;
  return tok.encode(prompt, opts);
}

bool is_family_name(std::string_view name) { return by_name(name) != nullptr; }

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
