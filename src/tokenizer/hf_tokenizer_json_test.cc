// tokenizer.json components on small hand-written files. Expected pieces and ids follow
// the tokenizers library's documented behaviour (e.g. the split-behaviour examples of
// its docs on "the-final--countdown").
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tokenizer/hf_pipeline.h"
#include "tokenizer/hf_tokenizer_spec.h"
#include "tokenizer/load_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace llms {
namespace {

using Json = nlohmann::json;

// A character-level BPE over a..e and a few merges, no normalizer, no pre-tokenizer.
Json base_json() {
  return Json::parse(R"({
    "version": "1.0", "added_tokens": [], "normalizer": null, "pre_tokenizer": null, "post_processor": null,
    "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
                {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
    "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": false,
              "vocab": {"<unk>": 0, "a": 1, "b": 2, "c": 3, "ab": 4, "bc": 5, "▁": 6, "<s>": 7, "[M]": 8},
              "merges": ["b c", "a b"]}})");
}

Result<std::unique_ptr<Tokenizer>> load(const Json& j) {
  auto spec = parse_tokenizer_json(j.dump());
  if (!spec.ok()) return spec.status();
  return Tokenizer::from_hf(*spec, HfTokenizerConfig{});
}

std::vector<int32_t> ids(const Tokenizer& tok, std::string_view text, bool special = false) {
  EncodeOptions o;
  o.add_bos = false;
  o.parse_special = special;
  return tok.encode(text, o);
}

std::string error_of(const Json& j) {
  auto t = load(j);
  return t.ok() ? "" : t.status().message();
}

TEST(HfTokenizerJsonTest, MalformedFilesAreErrorsThatSayWhy) {
  EXPECT_NE(parse_tokenizer_json("{\"model\": ").status().message().find("not valid JSON"), std::string::npos);
  EXPECT_NE(parse_tokenizer_json("[1, 2]").status().message().find("expected a JSON object"), std::string::npos);
  EXPECT_NE(parse_tokenizer_json("{}").status().message().find("model"), std::string::npos);
  Json j = base_json();
  j["model"]["vocab"] = 5;
  EXPECT_NE(error_of(j).find("model.vocab: expected an object"), std::string::npos);
  j = base_json();
  j["model"]["vocab"]["x"] = -3;
  EXPECT_NE(error_of(j).find("model.vocab['x']"), std::string::npos);
  j = base_json();
  j["model"]["vocab"]["x"] = 1;  // id 1 twice
  EXPECT_NE(error_of(j).find("given twice"), std::string::npos);
  j = base_json();
  j["model"]["merges"].push_back("c zz");
  EXPECT_NE(error_of(j).find("'zz' is not a token"), std::string::npos);
  j = base_json();
  j["model"]["unk_token"] = "<nope>";
  EXPECT_NE(error_of(j).find("unk_token '<nope>'"), std::string::npos);
  j = base_json();
  j["added_tokens"] = Json::array({{{"id", "seven"}, {"content", "<s>"}}});
  EXPECT_NE(error_of(j).find("added_tokens[0].id"), std::string::npos);
}

TEST(HfTokenizerJsonTest, UnsupportedComponentsAreNamed) {
  const auto refused = [](const char* section, Json value, const char* name) {
    Json j = base_json();
    j[section] = std::move(value);
    const std::string e = error_of(j);
    EXPECT_NE(e.find(name), std::string::npos) << section << ": " << e;
    EXPECT_NE(e.find("not supported"), std::string::npos) << e;
  };
  refused("normalizer", {{"type", "BertNormalizer"}}, "'BertNormalizer'");
  refused("normalizer", {{"type", "Precompiled"}, {"precompiled_charsmap", "AAAA"}}, "'Precompiled'");
  refused("pre_tokenizer", {{"type", "UnicodeScripts"}}, "'UnicodeScripts'");
  refused("post_processor", {{"type", "Template"}}, "'Template'");
  refused("decoder", {{"type", "WordPiece"}, {"prefix", "##"}}, "'WordPiece'");
  Json j = base_json();
  j["model"] = {{"type", "WordPiece"}, {"vocab", Json::object()}};
  EXPECT_NE(error_of(j).find("type 'WordPiece' is not supported"), std::string::npos);
  j = base_json();
  j["model"]["dropout"] = 0.1;
  EXPECT_NE(error_of(j).find("dropout"), std::string::npos);
  j = base_json();
  j.erase("decoder");
  EXPECT_NE(error_of(j).find("without a decoder"), std::string::npos);
}

TEST(HfTokenizerJsonTest, BpeMergesByRankNotByPosition) {
  auto tok = load(base_json());
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  // "b c" has rank 0, so "abc" is a + bc although "a b" is the leftmost pair.
  EXPECT_EQ(ids(**tok, "abc"), (std::vector<int32_t>{1, 5}));
  EXPECT_EQ(ids(**tok, "ab"), (std::vector<int32_t>{4}));
}

TEST(HfTokenizerJsonTest, UnknownCharactersFuseOrFallBackToBytes) {
  auto fused = load(base_json());
  ASSERT_TRUE(fused.ok());
  EXPECT_EQ(ids(**fused, "a\xC3\xA9\xC3\xA9" "b"), (std::vector<int32_t>{1, 0, 2}));  // "aééb": one <unk>
  Json j = base_json();
  j["model"]["fuse_unk"] = false;
  auto unfused = load(j);
  ASSERT_TRUE(unfused.ok());
  EXPECT_EQ(ids(**unfused, "a\xC3\xA9\xC3\xA9" "b"), (std::vector<int32_t>{1, 0, 0, 2}));
  j = base_json();
  j["model"]["byte_fallback"] = true;
  j["model"]["vocab"]["<0xC3>"] = 9;
  j["model"]["vocab"]["<0xA9>"] = 10;
  auto bytes = load(j);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(ids(**bytes, "\xC3\xA9"), (std::vector<int32_t>{9, 10}));
  EXPECT_EQ((*bytes)->decode(std::vector<int32_t>{1, 9, 10}), "a\xC3\xA9");
  EXPECT_EQ((*bytes)->token_type(9), TokenType::kByte);
}

std::vector<std::string> pre_tokenize(const Json& pre, std::string_view text, bool at_start = true) {
  Json j = base_json();
  j["pre_tokenizer"] = pre;
  if (pre["type"] == "ByteLevel") j["decoder"] = {{"type", "ByteLevel"}};
  auto spec = parse_tokenizer_json(j.dump());
  EXPECT_TRUE(spec.ok()) << spec.status().to_string();
  if (!spec.ok()) return {};
  auto p = HfTextPipeline::create(*spec);
  EXPECT_TRUE(p.ok());
  std::vector<std::string> pieces;
  (*p)->pre_tokenize(text, at_start, &pieces);
  return pieces;
}

Json split(const char* behavior) {
  return {{"type", "Split"}, {"pattern", {{"String", "-"}}}, {"behavior", behavior}, {"invert", false}};
}

TEST(HfTokenizerJsonTest, SplitBehavioursMatchTheLibrarysExamples) {
  using V = std::vector<std::string>;
  const char* text = "the-final--countdown";
  EXPECT_EQ(pre_tokenize(split("Removed"), text), (V{"the", "final", "countdown"}));
  EXPECT_EQ(pre_tokenize(split("Isolated"), text), (V{"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(pre_tokenize(split("MergedWithPrevious"), text), (V{"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(pre_tokenize(split("MergedWithNext"), text), (V{"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(pre_tokenize(split("Contiguous"), text), (V{"the", "-", "final", "--", "countdown"}));
  Json inverted = split("Removed");
  inverted["pattern"] = {{"Regex", "[a-z]+"}};
  inverted["invert"] = true;
  EXPECT_EQ(pre_tokenize(inverted, text), (V{"the", "final", "countdown"}));
}

TEST(HfTokenizerJsonTest, OtherPreTokenizers) {
  using V = std::vector<std::string>;
  EXPECT_EQ(pre_tokenize({{"type", "Digits"}, {"individual_digits", true}}, "a123b"), (V{"a", "1", "2", "3", "b"}));
  EXPECT_EQ(pre_tokenize({{"type", "Digits"}, {"individual_digits", false}}, "a123b"), (V{"a", "123", "b"}));
  EXPECT_EQ(pre_tokenize({{"type", "Whitespace"}}, "Hey friend!  How?"), (V{"Hey", "friend", "!", "How", "?"}));
  EXPECT_EQ(pre_tokenize({{"type", "WhitespaceSplit"}}, "Hey friend!  How?"), (V{"Hey", "friend!", "How?"}));
  EXPECT_EQ(pre_tokenize({{"type", "Punctuation"}}, "Hey, you!"), (V{"Hey", ",", " you", "!"}));
  EXPECT_EQ(pre_tokenize({{"type", "ByteLevel"}, {"add_prefix_space", true}}, "Hello world"), (V{" Hello", " world"}));
  const Json first = {{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "first"}, {"split", true}};
  EXPECT_EQ(pre_tokenize(first, "Hey friend"), (V{"▁Hey", "▁friend"}));
  EXPECT_EQ(pre_tokenize(first, "Hey friend", /*at_start=*/false), (V{"Hey", "▁friend"}));
  const Json never = {{"type", "Metaspace"}, {"prepend_scheme", "never"}, {"split", false}};
  EXPECT_EQ(pre_tokenize(never, "Hey friend"), (V{"Hey▁friend"}));
}

TEST(HfTokenizerJsonTest, Normalizers) {
  const auto normalize = [](Json n, std::string_view text) {
    Json j = base_json();
    j["normalizer"] = std::move(n);
    auto spec = parse_tokenizer_json(j.dump());
    EXPECT_TRUE(spec.ok()) << spec.status().to_string();
    auto p = HfTextPipeline::create(*spec);
    return (*p)->normalize(text);
  };
  EXPECT_EQ(normalize({{"type", "Lowercase"}}, "\xC3\x80" "BC"), "\xC3\xA0" "bc");  // "ÀBC" → "àbc"
  EXPECT_EQ(normalize({{"type", "NFKC"}}, "\xEF\xAC\x81"), "fi");                  // the "ﬁ" ligature
  EXPECT_EQ(normalize({{"type", "NFC"}}, "e\xCC\x81"), "\xC3\xA9");               // e + combining acute → é
  EXPECT_EQ(normalize({{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}}, " \t x y \n"), "x y");
  EXPECT_EQ(normalize({{"type", "Replace"}, {"pattern", {{"Regex", "[0-9]+"}}}, {"content", "#"}}, "a12b3"), "a#b#");
  const Json seq = {{"type", "Sequence"},
                    {"normalizers", {{{"type", "Prepend"}, {"prepend", "▁"}},
                                     {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "▁"}}}}};
  EXPECT_EQ(normalize(seq, "a b"), "▁a▁b");
  EXPECT_EQ(normalize(seq, ""), "");  // Prepend leaves empty text empty
  // Invalid UTF-8 passes the Unicode rewrites unchanged.
  EXPECT_EQ(normalize({{"type", "Lowercase"}}, "A\xFF" "B"), "a\xFF" "b");
}

TEST(HfTokenizerJsonTest, AddedTokenFlags) {
  Json j = base_json();
  j["added_tokens"] = Json::array(
      {{{"id", 8}, {"content", "[M]"}, {"special", false}, {"lstrip", true}, {"rstrip", true}, {"normalized", false},
        {"single_word", true}},
       {{"id", 7}, {"content", "<s>"}, {"special", true}, {"normalized", false}}});
  auto tok = load(j);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  // lstrip and rstrip swallow the spaces around it; single_word refuses it inside a word.
  EXPECT_EQ(ids(**tok, "a [M] b"), (std::vector<int32_t>{1, 8, 2}));
  EXPECT_EQ(ids(**tok, "a[M]b"), (std::vector<int32_t>{1, 0, 2}));  // '[', 'M', ']' are unknown: one fused <unk>
  // A special token only when special tokens are parsed.
  EXPECT_EQ(ids(**tok, "a<s>", /*special=*/true), (std::vector<int32_t>{1, 7}));
  EXPECT_EQ(ids(**tok, "a<s>"), (std::vector<int32_t>{1, 0}));
  EXPECT_EQ((*tok)->token_type(7), TokenType::kControl);
}

// With normalized = true the token's own text is normalized too, so LLaMA's Prepend
// makes "<s>" match only as "▁<s>": after a space or at the start, not glued to a word.
TEST(HfTokenizerJsonTest, NormalizedAddedTokensMatchTheNormalizedText) {
  Json j = base_json();
  j["normalizer"] = {{"type", "Sequence"},
                     {"normalizers", {{{"type", "Prepend"}, {"prepend", "▁"}},
                                      {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "▁"}}}}};
  j["added_tokens"] = Json::array({{{"id", 7}, {"content", "<s>"}, {"special", true}, {"normalized", true}}});
  auto tok = load(j);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ(ids(**tok, "a <s>", true), (std::vector<int32_t>{6, 1, 7}));
  EXPECT_EQ(ids(**tok, "<s>a", true), (std::vector<int32_t>{7, 1}));
  EXPECT_EQ(ids(**tok, "a<s>", true), (std::vector<int32_t>{6, 1, 0}));  // not matched: '<', 's', '>' unknown
}

TEST(HfTokenizerJsonTest, PostProcessorsAddTheirTokens) {
  Json j = base_json();
  j["post_processor"] = {{"type", "RobertaProcessing"}, {"cls", {"<s>", 7}}, {"sep", {"[M]", 8}}};
  auto tok = load(j);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->encode("ab"), (std::vector<int32_t>{7, 4, 8}));
  EXPECT_TRUE((*tok)->add_bos());
  EXPECT_TRUE((*tok)->add_eos());
  j["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single", {{{"Sequence", {{"id", "A"}}}}, {{"SpecialToken", {{"id", "</s>"}}}}}},
                         {"special_tokens", {{"</s>", {{"id", "</s>"}, {"ids", {8}}}}}}};
  tok = load(j);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->encode("ab"), (std::vector<int32_t>{4, 8}));
  j["post_processor"]["single"] = Json::array({{{"SpecialToken", {{"id", "nope"}}}}});
  EXPECT_NE(error_of(j).find("'nope' is not in special_tokens"), std::string::npos);
}

TEST(HfTokenizerJsonTest, UnigramPicksTheMostLikelySegmentation) {
  Json j = base_json();
  j["model"] = Json::parse(R"({"type": "Unigram", "unk_id": 0, "byte_fallback": false,
      "vocab": [["<unk>", 0.0], ["a", -1.0], ["b", -1.0], ["c", -5.0], ["ab", -3.0], ["bc", -1.5]]})");
  auto tok = load(j);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ(ids(**tok, "ab"), (std::vector<int32_t>{1, 2}));     // -2 beats "ab"'s -3
  EXPECT_EQ(ids(**tok, "abc"), (std::vector<int32_t>{1, 5}));    // a + bc: -2.5
  EXPECT_EQ(ids(**tok, "azzb"), (std::vector<int32_t>{1, 0, 2}));  // one <unk> for the unknown run
}

TEST(HfTokenizerJsonTest, DirectoryFilesGiveSpecialTokensTemplatesAndDefaults) {
  const auto dir = std::filesystem::temp_directory_path() / ("hf_tok_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto write = [&](const char* name, const std::string& text) { std::ofstream(dir / name) << text; };
  write("tokenizer.json", base_json().dump());
  write("tokenizer_config.json", R"({"bos_token": {"__type": "AddedToken", "content": "<s>"}, "eos_token": "[M]",
      "chat_template": [{"name": "default", "template": "{{ bos_token }}{{ messages[0]['content'] }}"},
                        {"name": "tool_use", "template": "T"}]})");
  write("generation_config.json", R"({"eos_token_id": [8, 3], "temperature": 0.6, "top_p": 0.9, "top_k": 20})");
  auto tok = load_tokenizer(dir.string());
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->bos_id(), 7);
  EXPECT_EQ((*tok)->eos_id(), 8);
  EXPECT_EQ((*tok)->chat_template(), "{{ bos_token }}{{ messages[0]['content'] }}");
  EXPECT_TRUE((*tok)->is_end_of_generation(3));  // from generation_config.json's list
  const GenerationDefaults& d = (*tok)->generation_defaults();
  EXPECT_EQ(d.eos_token_ids, (std::vector<int32_t>{8, 3}));
  EXPECT_FLOAT_EQ(*d.temperature, 0.6f);
  EXPECT_FLOAT_EQ(*d.top_p, 0.9f);
  EXPECT_EQ(*d.top_k, 20);
  write("chat_template.jinja", "J");
  write("generation_config.json", R"({"do_sample": false, "temperature": 0.6})");
  tok = load_tokenizer(dir.string());
  ASSERT_TRUE(tok.ok());
  EXPECT_EQ((*tok)->chat_template(), "J");
  EXPECT_FLOAT_EQ(*(*tok)->generation_defaults().temperature, 0.0f);  // greedy without do_sample
  write("generation_config.json", R"({"top_p": "high"})");
  EXPECT_NE(load_tokenizer(dir.string()).status().message().find("top_p"), std::string::npos);
  std::filesystem::remove(dir / "tokenizer.json");
  EXPECT_NE(load_tokenizer(dir.string()).status().message().find("no tokenizer.json"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace llms
