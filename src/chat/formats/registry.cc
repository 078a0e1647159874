// The tables of chat formats (format.h): one line per family and per tool-call format.
#include <fmt/format.h>

#include "base/check.h"
#include "chat/formats/format.h"

namespace llms::chat {

// Defined in the family files of this folder.
extern const TemplateFamily kChatMlFamily, kLlama2Family, kLlama3Family;         // chatml.cc, llama.cc
extern const TemplateFamily kMistralV1Family, kMistralV3Family, kMistralV3TekkenFamily, kMistralV7Family;  // mistral.cc
extern const TemplateFamily kZephyrFamily, kPhi3Family, kGemmaFamily;            // zephyr.cc, phi3.cc, gemma.cc
extern const TemplateFamily kDeepseekFamily, kDeepseek2Family, kDeepseek3Family;  // deepseek.cc
extern const ToolSyntax kHermesTools, kLlama3Tools, kMistralTools;              // chatml.cc, llama.cc, mistral.cc

namespace {

// The order a Jinja source's markers are tried in: the families that share "[INST]"
// from the most specific marker to the least.
constexpr const TemplateFamily* kFamilies[] = {
    &kChatMlFamily,    &kLlama3Family,       &kMistralV7Family, &kLlama2Family, &kMistralV3TekkenFamily,
    &kMistralV3Family, &kMistralV1Family,    &kPhi3Family,      &kZephyrFamily, &kGemmaFamily,
    &kDeepseekFamily,  &kDeepseek3Family,    &kDeepseek2Family,
};

// A template with [TOOL_CALLS] is Mistral's even when it also writes <tool_call>.
constexpr const ToolSyntax* kToolSyntaxes[] = {&kMistralTools, &kHermesTools, &kLlama3Tools};
constexpr const ToolSyntax* kParseFallbacks[] = {&kHermesTools, &kMistralTools};

}  // namespace

std::span<const TemplateFamily* const> template_families() { return kFamilies; }

const TemplateFamily& template_family(ChatTemplateKind kind) {
  for (const TemplateFamily* f : kFamilies) {
    if (f->kind == kind) return *f;
  }
  LLMS_CHECK(false, fmt::format("no family for chat template kind {}", static_cast<int>(kind)));
  __builtin_unreachable();
}

std::span<const ToolSyntax* const> tool_syntaxes() { return kToolSyntaxes; }

const ToolSyntax& default_tool_syntax() { return kHermesTools; }

const ToolSyntax& tool_syntax(ToolCallFormat format) {
  for (const ToolSyntax* s : kToolSyntaxes) {
    if (s->format == format) return *s;
  }
  return default_tool_syntax();
}

std::span<const ToolSyntax* const> tool_parse_fallbacks() { return kParseFallbacks; }

}  // namespace llms::chat
