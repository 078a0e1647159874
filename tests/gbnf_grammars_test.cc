// GBNF grammars in the style of llama.cpp's grammars/ folder (our own texts, in
// tests/data/grammars: arithmetic, JSON, a list, chess moves) compile, and what
// stories260K writes under them at temperature 1 is accepted by a recognizer written
// here for each language: a recursive-descent parser for the equations, nlohmann's
// parser for JSON, std::regex for the list and for each chess move.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "server_test_util.h"

namespace llms::test {
namespace {

std::string read_grammar(const std::string& name) {
  std::ifstream f(std::string(LLMSERVE_SOURCE_DIR) + "/tests/data/grammars/" + name + ".gbnf");
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// equation ("\n" equation){0,2}; see arithmetic.gbnf for the language.
class ArithmeticRecognizer {
 public:
  explicit ArithmeticRecognizer(std::string_view s) : s_(s) {}
  bool accepts() {
    for (int line = 0; line < 3; ++line) {
      if (!equation()) return false;
      if (p_ == s_.size()) return true;
      if (!eat('\n')) return false;
    }
    return false;
  }

 private:
  bool eat(char c) {
    if (p_ < s_.size() && s_[p_] == c) return ++p_, true;
    return false;
  }
  bool peek_in(std::string_view set) const { return p_ < s_.size() && set.find(s_[p_]) != std::string_view::npos; }
  bool equation() {
    if (!expression()) return false;
    if (s_.substr(p_, 3) != " = ") return false;
    p_ += 3;
    return number();
  }
  // An operator with optional spaces around it; nothing consumed when there is none.
  bool op(std::string_view ops) {
    const size_t at = p_;
    eat(' ');
    if (!peek_in(ops)) return p_ = at, false;
    ++p_;
    eat(' ');
    return true;
  }
  bool expression() {
    if (!product()) return false;
    for (int i = 0; i < 3 && op("+-"); ++i) {
      if (!product()) return false;
    }
    return true;
  }
  bool product() {
    if (!factor()) return false;
    for (int i = 0; i < 2 && op("*/"); ++i) {
      if (!factor()) return false;
    }
    return true;
  }
  bool factor() {
    if (eat('(')) return expression() && eat(')');
    if (eat('-')) return factor();
    if (peek_in("abcdefghijklmnopqrstuvwxyz")) {
      ++p_;
      for (int i = 0; i < 4 && peek_in("abcdefghijklmnopqrstuvwxyz0123456789_"); ++i) ++p_;
      return true;
    }
    return number();
  }
  bool number() {
    if (eat('0')) return true;
    if (!peek_in("123456789")) return false;
    ++p_;
    for (int i = 0; i < 5 && peek_in("0123456789"); ++i) ++p_;
    return true;
  }
  std::string_view s_;
  size_t p_ = 0;
};

bool arithmetic_ok(const std::string& s) { return ArithmeticRecognizer(s).accepts(); }

size_t code_points(const std::string& s) {
  size_t n = 0;
  for (const unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// Strings of at most 10 characters, at most 4 members or elements a level.
bool json_bounds_ok(const Json& v) {
  if (v.is_string()) return code_points(v.get<std::string>()) <= 10;
  if (!v.is_object() && !v.is_array()) return true;
  if (v.size() > 4) return false;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (v.is_object() && code_points(it.key()) > 10) return false;
    if (!json_bounds_ok(*it)) return false;
  }
  return true;
}

bool json_ok(const std::string& s) {
  const Json v = Json::parse(s, nullptr, false);
  return !v.is_discarded() && v.is_object() && json_bounds_ok(v);
}

bool list_ok(const std::string& s) {
  static const std::regex list("(- [A-Z][a-z ,']{1,24}[.!]?\n){1,5}");
  return std::regex_match(s, list);
}

// "1. m m 2. m m ..." with one to four turns, numbered in order, each move SAN.
bool chess_ok(const std::string& s) {
  static const std::regex san("(O-O(-O)?|[KQRBN][a-h1-8]?x?[a-h][1-8]|([a-h]x)?[a-h][1-8](=[QRBN])?)[+#]?");
  std::istringstream in(s);
  std::string word;
  int turn = 0, moves = 0;
  while (in >> word) {
    if (moves % 2 == 0 && word == std::to_string(turn + 1) + ".") {
      if (moves != 2 * turn) return false;
      ++turn;
    } else if (!std::regex_match(word, san) || moves >= 2 * turn) {
      return false;
    } else {
      ++moves;
    }
  }
  // Single spaces only, and every turn complete.
  return turn >= 1 && turn <= 4 && moves == 2 * turn && s.find("  ") == std::string::npos && s.front() == '1' &&
         s.back() != ' ';
}

// The recognizers refuse what they should, so that their passing below means something.
TEST(GbnfRecognizersTest, RefuseWrongText) {
  EXPECT_TRUE(arithmetic_ok("a1 * (2 - -b) = 10\nx = 0"));
  EXPECT_FALSE(arithmetic_ok("a + = 2"));
  EXPECT_FALSE(arithmetic_ok("(a = 2"));
  EXPECT_FALSE(arithmetic_ok("a = 02"));
  EXPECT_FALSE(arithmetic_ok("a+b+c+d+e = 1"));
  EXPECT_TRUE(json_ok(R"({"a": [1, {"b": null}], "c": "\u00e9"})"));
  EXPECT_FALSE(json_ok(R"({"a": "far too long a string"})"));
  EXPECT_FALSE(json_ok(R"([1])"));
  EXPECT_FALSE(json_ok(R"({"a": 1,})"));
  EXPECT_TRUE(list_ok("- Milk.\n- Two eggs\n"));
  EXPECT_FALSE(list_ok("- milk\n"));
  EXPECT_FALSE(list_ok("- Milk"));
  EXPECT_TRUE(chess_ok("1. e4 e5 2. Nf3 Nc6 3. Bb5 a6"));
  EXPECT_TRUE(chess_ok("1. O-O exd8=Q#"));
  EXPECT_FALSE(chess_ok("1. e4 e5 3. Nf3 Nc6"));
  EXPECT_FALSE(chess_ok("1. e4"));
  EXPECT_FALSE(chess_ok("1. e9 e5"));
  EXPECT_FALSE(chess_ok("1. Pe4 e5"));
}

class GbnfGrammarsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (have_stories()) server_ = start_server(stories_path()).release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (!have_stories()) GTEST_SKIP() << "needs " << shared_dir() << "/models/stories260K.gguf";
  }

  // Samples under the grammar with several seeds; every output must finish and pass.
  void check(const std::string& name, bool (*recognizer)(const std::string&)) {
    const std::string grammar = read_grammar(name);
    ASSERT_FALSE(grammar.empty()) << name;
    std::set<std::string> distinct;
    for (int seed = 1; seed <= 10; ++seed) {
      const HttpResult r = http_post(server_->port(), "/v1/completions",
                                     Json{{"prompt", "Once upon a time"}, {"grammar", grammar}, {"temperature", 1.0},
                                          {"seed", seed}, {"max_tokens", 400}});
      ASSERT_EQ(r.status, 200) << name << ": " << r.body;
      const Json j = r.json();
      const std::string text = j["choices"][0]["text"];
      EXPECT_EQ(j["choices"][0]["finish_reason"], "stop") << name << ": " << text;
      EXPECT_TRUE(recognizer(text)) << name << ": " << text;
      distinct.insert(text);
    }
    EXPECT_GT(distinct.size(), 5u) << name;  // temperature 1 explores the language
  }
  static LlmServer* server_;
};
LlmServer* GbnfGrammarsTest::server_ = nullptr;

TEST_F(GbnfGrammarsTest, Arithmetic) { check("arithmetic", arithmetic_ok); }
TEST_F(GbnfGrammarsTest, Json) { check("json", json_ok); }
TEST_F(GbnfGrammarsTest, List) { check("list", list_ok); }
TEST_F(GbnfGrammarsTest, Chess) { check("chess", chess_ok); }

}  // namespace
}  // namespace llms::test
