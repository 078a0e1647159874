// Hugging Face's Zephyr: <|user|>\n...</s>\n.
#include "chat/formats/format.h"
#include "chat/formats/template_util.h"

namespace llms::chat {
namespace {

Result<std::string> render_zephyr(const Messages& m, bool gen, const Tokens& t) {
  std::string out;
  for (size_t i = 0; i < m.size(); ++i) {
    const std::string& role = m[i].role;
    if (role == "user" || role == "system" || role == "assistant") {
      out += "<|" + role + "|>\n" + m[i].content + t.eos + "\n";
    }
    if (i + 1 == m.size() && gen) out += "<|assistant|>\n";
  }
  return out;
}

}  // namespace

extern const TemplateFamily kZephyrFamily = {
    ChatTemplateKind::kZephyr, "zephyr", "", "<s>", "</s>",
    [](std::string_view src) { return has(src, "<|user|>") && has(src, "<|assistant|>"); },
    render_zephyr,
};

}  // namespace llms::chat
