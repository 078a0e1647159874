// Each family renders a fixed conversation to the string its published template
// produces (written out by hand from that template, whitespace included).
#include "chat/chat_template.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "chat/formats/template_util.h"
#include "tokenizer/testing/tokenizer_test_util.h"

namespace llms {
namespace {

const std::vector<ChatMessage> kConversation = {
    {"system", "You are helpful."},
    {"user", "Hi!"},
    {"assistant", "Hello there."},
    {"user", "What is 2+2?"},
};

// The example conversation of Mistral's tokenization guide.
const std::vector<ChatMessage> kMistralGuide = {
    {"user", "Hello, how are you?"},
    {"assistant", "Fine, and you?"},
    {"user", "I'm doing great!"},
    {"assistant", "Glad to hear!"},
};

std::string render(const std::string& name, const std::vector<ChatMessage>& msgs, bool gen = true) {
  auto r = apply_chat_template(name, msgs, gen);
  EXPECT_TRUE(r.ok()) << name << ": " << r.status().to_string();
  return r.ok() ? *r : std::string();
}

TEST(ChatTemplateTest, ChatMl) {
  EXPECT_EQ(render("chatml", kConversation),
            "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n"
            "<|im_start|>assistant\nHello there.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(render("chatml", {{"user", "x"}}, false), "<|im_start|>user\nx<|im_end|>\n");
}

TEST(ChatTemplateTest, Llama2) {
  EXPECT_EQ(render("llama2", kConversation),
            "<s>[INST] <<SYS>>\nYou are helpful.\n<</SYS>>\n\nHi! [/INST] Hello there. </s>"
            "<s>[INST] What is 2+2? [/INST]");
  // content.strip() applies to user and assistant text.
  EXPECT_EQ(render("llama2", {{"user", "  hi \n"}}), "<s>[INST] hi [/INST]");
}

TEST(ChatTemplateTest, Llama3) {
  EXPECT_EQ(render("llama3", kConversation),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are helpful.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello there.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplateTest, MistralFamiliesMatchMistralsTokenizationGuide) {
  EXPECT_EQ(
      render("mistral-v1", kMistralGuide),
      "<s> [INST] Hello, how are you? [/INST] Fine, and you?</s> [INST] I'm doing great! [/INST] Glad to hear!</s>");
  EXPECT_EQ(render("mistral-v3", kMistralGuide),
            "<s>[INST] Hello, how are you?[/INST] Fine, and you?</s>[INST] I'm doing great![/INST] Glad to hear!</s>");
  EXPECT_EQ(render("mistral-v3-tekken", kMistralGuide),
            "<s>[INST]Hello, how are you?[/INST]Fine, and you?</s>[INST]I'm doing great![/INST]Glad to hear!</s>");
  EXPECT_EQ(render("mistral", kMistralGuide), render("mistral-v1", kMistralGuide));
}

TEST(ChatTemplateTest, MistralSystemMessagePlacement) {
  // v1 prepends the system text to the first user turn, v3 to the last one.
  EXPECT_EQ(render("mistral-v1", kConversation),
            "<s> [INST] You are helpful.\n\nHi! [/INST] Hello there.</s> [INST] What is 2+2? [/INST]");
  EXPECT_EQ(render("mistral-v3", kConversation),
            "<s>[INST] Hi![/INST] Hello there.</s>[INST] You are helpful.\n\nWhat is 2+2?[/INST]");
  EXPECT_EQ(render("mistral-v7", kConversation),
            "<s>[SYSTEM_PROMPT] You are helpful.[/SYSTEM_PROMPT][INST] Hi![/INST] Hello there.</s>"
            "[INST] What is 2+2?[/INST]");
}

TEST(ChatTemplateTest, Zephyr) {
  EXPECT_EQ(render("zephyr", kConversation),
            "<|system|>\nYou are helpful.</s>\n<|user|>\nHi!</s>\n<|assistant|>\nHello there.</s>\n"
            "<|user|>\nWhat is 2+2?</s>\n<|assistant|>\n");
}

TEST(ChatTemplateTest, Phi3) {
  EXPECT_EQ(render("phi3", kConversation),
            "<|system|>\nYou are helpful.<|end|>\n<|user|>\nHi!<|end|>\n<|assistant|>\nHello there.<|end|>\n"
            "<|user|>\nWhat is 2+2?<|end|>\n<|assistant|>\n");
  EXPECT_EQ(render("phi3", {{"user", "x"}}, false), "<|user|>\nx<|end|>\n<|endoftext|>");
}

TEST(ChatTemplateTest, Gemma) {
  EXPECT_EQ(render("gemma", kConversation),
            "<bos><start_of_turn>user\nYou are helpful.\n\nHi!<end_of_turn>\n"
            "<start_of_turn>model\nHello there.<end_of_turn>\n"
            "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n");
}

TEST(ChatTemplateTest, DeepseekCoder) {
  EXPECT_EQ(render("deepseek", kConversation),
            "<｜begin▁of▁sentence｜>You are helpful.### Instruction:\nHi!\n### Response:\nHello there.\n<|EOT|>\n"
            "### Instruction:\nWhat is 2+2?\n### Response:\n");
  // Without a system message the template writes its own.
  EXPECT_EQ(render("deepseek", {{"user", "Hi!"}}),
            "<｜begin▁of▁sentence｜>You are an AI programming assistant, utilizing the Deepseek Coder model, "
            "developed by Deepseek Company, and you only answer questions related to computer science. For "
            "politically sensitive questions, security and privacy issues, and other non-computer science "
            "questions, you will refuse to answer\n### Instruction:\nHi!\n### Response:\n");
}

TEST(ChatTemplateTest, DeepseekChat) {
  EXPECT_EQ(render("deepseek2", kConversation),
            "<｜begin▁of▁sentence｜>You are helpful.\n\nUser: Hi!\n\nAssistant: Hello there.<｜end▁of▁sentence｜>"
            "User: What is 2+2?\n\nAssistant:");
  EXPECT_EQ(render("deepseek3", kConversation),
            "<｜begin▁of▁sentence｜>You are helpful.<｜User｜>Hi!<｜Assistant｜>Hello there.<｜end▁of▁sentence｜>"
            "<｜User｜>What is 2+2?<｜Assistant｜>");
}

TEST(ChatTemplateTest, CallerSuppliedTokensReplaceTheDefaults) {
  ChatTemplateTokens t;
  t.bos = "<BOS>";
  t.eos = "<EOS>";
  auto r = apply_chat_template("llama2", {{"user", "a"}, {"assistant", "b"}}, false, t);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "<BOS>[INST] a [/INST] b <EOS>");
}

TEST(ChatTemplateTest, PublishedRoleRulesAreErrors) {
  const std::vector<ChatMessage> twice = {{"user", "a"}, {"user", "b"}};
  for (const char* name : {"llama2", "mistral-v1", "mistral-v3", "gemma"}) {
    auto r = apply_chat_template(name, twice, true);
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_NE(r.status().message().find("alternate"), std::string::npos) << name;
  }
  auto r = apply_chat_template("mistral-v1", {{"user", "a"}, {"tool", "b"}}, true);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("Only user and assistant roles"), std::string::npos);
}

TEST(ChatTemplateDetectTest, RecognisesPublishedTemplateSources) {
  const std::vector<std::pair<std::string, ChatTemplateKind>> cases = {
      {"{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
       "'<|im_end|>' + '\\n'}}{% endfor %}",
       ChatTemplateKind::kChatMl},
      {"{% if messages[0]['role'] == 'system' %}...{% set content = '<<SYS>>\\n' + system_message %}"
       "{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}",
       ChatTemplateKind::kLlama2},
      {"{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | "
       "trim + '<|eot_id|>' %}",
       ChatTemplateKind::kLlama3},
      {"{{ bos_token }}{% for message in messages %}{{ ' [INST] ' + message['content'] + ' [/INST]' }}",
       ChatTemplateKind::kMistralV1},
      {"{{- \"[AVAILABLE_TOOLS] [\" }}{{- \"[INST] \" + message[\"content\"] + \"[/INST]\" }}",
       ChatTemplateKind::kMistralV3},
      {"{{- \"[AVAILABLE_TOOLS][\" }}{{- \"[INST]\" + message[\"content\"] + \"[/INST]\" }}",
       ChatTemplateKind::kMistralV3Tekken},
      {"{{- '[SYSTEM_PROMPT] ' + message['content'] + '[/SYSTEM_PROMPT]' }}{{- '[INST] ' }}",
       ChatTemplateKind::kMistralV7},
      {"{{ '<|user|>\n' + message['content'] + eos_token }}{{ '<|assistant|>' }}", ChatTemplateKind::kZephyr},
      {"{{'<|user|>\\n' + message['content'] + '<|end|>\\n'}}{{ '<|assistant|>\\n' }}", ChatTemplateKind::kPhi3},
      {"{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}",
       ChatTemplateKind::kGemma},
      {"{{'### Instruction:\\n' + message['content'] + '\\n'}}{{'### Response:\\n' + message['content'] + "
       "'\\n<|EOT|>\\n'}}",
       ChatTemplateKind::kDeepseek},
      {"{{ 'User: ' + message['content'] + '\\n\\n' }}{{ 'Assistant: ' + message['content'] + eos_token }}",
       ChatTemplateKind::kDeepseek2},
      {"{{'<｜User｜>' + message['content']}}{{'<｜Assistant｜>' + content + '<｜end▁of▁sentence｜>'}}",
       ChatTemplateKind::kDeepseek3},
  };
  for (const auto& [source, kind] : cases) {
    auto r = detect_chat_template(source);
    ASSERT_TRUE(r.ok()) << source << ": " << r.status().to_string();
    EXPECT_EQ(*r, kind) << source << " detected as " << chat_template_name(*r);
  }
  for (const auto name : chat_template_names()) {
    auto r = detect_chat_template(name);
    ASSERT_TRUE(r.ok()) << name;
    EXPECT_EQ(chat_template_name(*r), name);
  }
}

TEST(ChatTemplateDetectTest, UnrecognisedTemplatesNameTheOverrideOption) {
  auto src = detect_chat_template("{% for m in messages %}<<<{{ m.content }}>>>{% endfor %}");
  ASSERT_FALSE(src.ok());
  EXPECT_NE(src.status().message().find("--chat-template"), std::string::npos);
  EXPECT_NE(src.status().message().find("chatml"), std::string::npos);
  auto name = detect_chat_template("vicuna");
  ASSERT_FALSE(name.ok());
  EXPECT_NE(name.status().message().find("--chat-template"), std::string::npos);
  EXPECT_NE(name.status().message().find("'vicuna'"), std::string::npos);
}

TEST(ChatTemplateModelTest, UsesTheVocabularyTokensAndAvoidsADoubleBos) {
  LLMS_LOAD_TOKENIZER_OR_SKIP(lt, "models/stories260K.gguf");
  const std::vector<ChatMessage> msgs = {{"user", "Hi"}};
  auto missing = apply_model_chat_template(*lt.tok, msgs, true);
  ASSERT_FALSE(missing.ok()) << "stories260K has no chat template";
  EXPECT_NE(missing.status().message().find("--chat-template"), std::string::npos);
  auto prompt = apply_model_chat_template(*lt.tok, msgs, true, "llama2");
  ASSERT_TRUE(prompt.ok()) << prompt.status().to_string();
  EXPECT_EQ(*prompt, "<s>[INST] Hi [/INST]");
  const auto ids = encode_chat_prompt(*lt.tok, *prompt);
  ASSERT_GE(ids.size(), 2u);
  EXPECT_EQ(ids[0], lt.tok->bos_id());
  EXPECT_NE(ids[1], lt.tok->bos_id());
  // A template without BOS text gets the vocabulary's BOS.
  EXPECT_EQ(encode_chat_prompt(*lt.tok, "Hi")[0], lt.tok->bos_id());
}

TEST(ChatStripTest, StripsUnicodeWhitespaceLikePython) {
  EXPECT_EQ(chat::strip("\xE3\x80\x80 \t hi there \n\xC2\xA0"), "hi there");
  EXPECT_EQ(chat::strip("   "), "");
  EXPECT_EQ(chat::strip("x"), "x");
  EXPECT_EQ(chat::strip("日本"), "日本");
}

TEST(ChatTemplateToolsTest, MistralWritesToolResults) {
  std::vector<ChatMessage> msgs(3);
  msgs[0].role = "user";
  msgs[0].content = "Weather?";
  msgs[1].role = "assistant";
  msgs[1].content = "[TOOL_CALLS] [{\"name\": \"w\", \"arguments\": {}}]";
  msgs[2].role = "tool";
  msgs[2].content = "said \"sunny\"\n";
  msgs[2].tool_call_id = "abc123def";
  for (const char* name : {"mistral-v3", "mistral-v7"}) {
    auto r = apply_chat_template(name, msgs, true);
    ASSERT_TRUE(r.ok()) << name << ": " << r.status().to_string();
    EXPECT_NE(r->find("[TOOL_RESULTS] {\"content\": \"said \\\"sunny\\\"\\n\", \"call_id\": \"abc123def\"}[/TOOL_RESULTS]"),
              std::string::npos)
        << *r;
  }
}

// The parse cache gives what parsing gives, for templates and errors alike, across
// more distinct sources than it keeps, and from several threads at once.
TEST(ChatTemplateCacheTest, CachedParsesRenderAsFreshOnes) {
  const std::vector<ChatMessage> msgs = {{"user", "hi"}};
  const jinja::Value ctx = chat_template_context(msgs, true, {}, nullptr);
  std::vector<std::string> sources;
  for (int i = 0; i < 12; ++i) {
    sources.push_back(fmt::format("{{% for m in messages %}}<{}>{{{{ m.content }}}}{{% endfor %}}", i));
  }
  sources.push_back("{% for m in messages %}");  // unclosed: an error
  for (int pass = 0; pass < 2; ++pass) {
    for (const std::string& src : sources) {
      auto fresh = JinjaTemplate::parse(src);
      auto cached = parse_chat_template_cached(src);
      ASSERT_EQ(fresh.ok(), cached.ok()) << src;
      if (!fresh.ok()) {
        EXPECT_EQ(fresh.status().message(), cached.status().message());
        continue;
      }
      EXPECT_EQ(*fresh->render(ctx), *cached->render(ctx)) << src;
    }
  }
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const int k = (i * 7 + t) % 12;
        auto r = parse_chat_template_cached(sources[static_cast<size_t>(k)]);
        if (!r.ok() || *r->render(ctx) != fmt::format("<{}>hi", k)) ++wrong;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace llms
