// libFuzzer target for the chat-template renderer: random message lists through every
// template family, and random text taken as a Jinja source (interpreted, or
// recognised as a family; fuzz/jinja_fuzz.cc fuzzes the interpreter itself).
// Input (FuzzedDataProvider): a family index (or, past the families, a random source
// string to detect), add_generation_prompt, BOS/EOS texts, then up to 12 messages
// with a role (the five OpenAI roles or random text) and random content.
// Properties, beyond "no crash, no sanitizer report":
//   * rendering by name equals rendering the detected family (and is deterministic);
//   * a rendered prompt holds the text of every user and assistant turn and of a
//     leading system message (trimmed as the templates trim it; must_appear() lists
//     where the published templates drop one);
//   * the rendered prompt encodes to valid ids with the stories260K vocabulary.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "chat/chat_template.h"
#include "chat/formats/template_util.h"

namespace llms::fuzz {
namespace {

constexpr size_t kMaxMessages = 12;
constexpr size_t kMaxText = 256;

std::vector<ChatMessage> random_messages(FuzzedDataProvider& in) {
  static const char* const kRoles[] = {"system", "user", "assistant", "tool", "user", "assistant"};
  std::vector<ChatMessage> msgs(in.ConsumeIntegralInRange<size_t>(0, kMaxMessages));
  for (auto& m : msgs) {
    const size_t r = in.ConsumeIntegralInRange<size_t>(0, std::size(kRoles));
    m.role = r < std::size(kRoles) ? kRoles[r] : in.ConsumeRandomLengthString(16);
    m.content = in.ConsumeRandomLengthString(kMaxText);
  }
  return msgs;
}

// Whether the prompt must hold message i's text. User and assistant turns always;
// a leading system message unless the family folds it into a turn that is not there
// (Llama 2, Mistral v1, Gemma: the next turn; Mistral v3: the last turn, if the
// user's). Other messages (tool results, system messages later on, unknown roles)
// are left out by some published templates, so the renderer may too.
bool must_appear(std::string_view family, const std::vector<ChatMessage>& msgs, size_t i) {
  const std::string& role = msgs[i].role;
  if (role == "user" || role == "assistant") return true;
  if (role != "system" || i != 0) return false;
  if (family == "mistral-v3" || family == "mistral-v3-tekken") return msgs.back().role == "user";
  return !((family == "llama2" || family == "mistral-v1" || family == "gemma") && msgs.size() == 1);
}

void check_rendered(std::string_view family, const std::string& out, const std::vector<ChatMessage>& msgs) {
  for (size_t i = 0; i < msgs.size(); ++i) {
    if (!must_appear(family, msgs, i) || out.find(chat::strip(msgs[i].content)) != std::string::npos) continue;
    fail(std::string(family) + ": the text of message " + std::to_string(i) + " (" + msgs[i].role +
         ") is missing from the prompt");
  }
  const Tokenizer& tok = stories_tokenizer();
  for (const int32_t id : encode_chat_prompt(tok, out)) {
    if (!tok.is_valid_id(id)) fail("the rendered prompt encoded to an id outside the vocabulary");
  }
}

}  // namespace
}  // namespace llms::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  llms::fuzz::stories_tokenizer();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace llms;
  FuzzedDataProvider in(data, size);
  const auto names = chat_template_names();
  const size_t pick = in.ConsumeIntegralInRange<size_t>(0, names.size());
  const std::string source = pick < names.size() ? std::string(names[pick]) : in.ConsumeRandomLengthString(512);
  const bool gen = in.ConsumeBool();
  ChatTemplateTokens tokens;
  if (in.ConsumeBool()) {
    tokens.bos = in.ConsumeRandomLengthString(12);
    tokens.eos = in.ConsumeRandomLengthString(12);
  }
  const std::vector<ChatMessage> msgs = fuzz::random_messages(in);
  auto out = apply_chat_template(source, msgs, gen, tokens);
  if (!is_family_name(source)) return 0;  // a Jinja source: a prompt or a Status, either is fine
  auto kind = detect_chat_template(source);
  if (!kind.ok()) fuzz::fail("a family name was not recognised");
  auto again = render_chat_template(kind.value(), msgs, gen, tokens);
  if (out.ok() != again.ok() || (out.ok() && out.value() != again.value())) {
    fuzz::fail("rendering by name and by the detected family differ");
  }
  if (out.ok()) fuzz::check_rendered(chat_template_name(kind.value()), out.value(), msgs);
  return 0;
}
