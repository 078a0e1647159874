// Google's Gemma: <start_of_turn>user\n...<end_of_turn>\n, the assistant's turns as
// "model"; a system message's text joins the first turn.
#include "chat/formats/format.h"
#include "chat/formats/template_util.h"

namespace llms::chat {
namespace {

Result<std::string> render_gemma(const Messages& m, bool gen, const Tokens& t) {
  const SystemSplit s = split_system(m);
  LLMS_RETURN_IF_ERROR(check_alternation(s.rest, kAlternate));
  std::string out = t.bos;
  for (size_t i = 0; i < s.rest.size(); ++i) {
    const ChatMessage& msg = s.rest[i];
    const std::string role = msg.role == "assistant" ? "model" : msg.role;
    const std::string prefix = (i == 0 && s.has_system) ? std::string(s.system) + "\n\n" : "";
    out += "<start_of_turn>" + role + "\n" + prefix + strip(msg.content) + "<end_of_turn>\n";
  }
  if (gen) out += "<start_of_turn>model\n";
  return out;
}

}  // namespace

extern const TemplateFamily kGemmaFamily = {
    ChatTemplateKind::kGemma, "gemma", "", "<bos>", "<eos>",
    [](std::string_view src) { return has(src, "<start_of_turn>"); },
    render_gemma,
};

}  // namespace llms::chat
