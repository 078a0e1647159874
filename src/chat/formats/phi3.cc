// Microsoft's Phi-3: <|user|>\n...<|end|>\n.
#include "chat/formats/format.h"
#include "chat/formats/template_util.h"

namespace llms::chat {
namespace {

Result<std::string> render_phi3(const Messages& m, bool gen, const Tokens& t) {
  std::string out;
  for (const ChatMessage& msg : m) {
    if (msg.role == "system" || msg.role == "user" || msg.role == "assistant") {
      out += "<|" + msg.role + "|>\n" + msg.content + "<|end|>\n";
    }
  }
  out += gen ? "<|assistant|>\n" : t.eos;
  return out;
}

}  // namespace

extern const TemplateFamily kPhi3Family = {
    ChatTemplateKind::kPhi3, "phi3", "", "<s>", "<|endoftext|>",
    [](std::string_view src) { return has(src, "<|assistant|>") && has(src, "<|end|>"); },
    render_phi3,
};

}  // namespace llms::chat
