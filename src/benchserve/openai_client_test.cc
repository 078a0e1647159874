#include "benchserve/openai_client.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace llms::benchserve {
namespace {

std::vector<std::string> split_in_pieces(const std::string& stream, size_t piece) {
  SseSplitter sse;
  std::vector<std::string> got;
  for (size_t i = 0; i < stream.size(); i += piece) {
    const std::string part = stream.substr(i, piece);
    sse.feed(part.data(), part.size(), [&](const std::string& d) { got.push_back(d); });
  }
  return got;
}

TEST(SseSplitter, EventsWhateverTheReadBoundaries) {
  const std::string stream = "data: {\"a\":1}\n\n: comment\n\ndata: {\"b\":2}\r\n\r\ndata:x\ndata: y\n\ndata: [DONE]\n\n";
  const std::vector<std::string> want = {"{\"a\":1}", "{\"b\":2}", "x\ny", "[DONE]"};
  for (size_t piece : {1, 2, 3, 7, 1000}) EXPECT_EQ(split_in_pieces(stream, piece), want) << piece;
}

TEST(RequestBody, CompletionsAndChatShapes) {
  RequestSpec spec{"/v1/completions", "m", "hello", 12, true, 0.5};
  auto j = nlohmann::json::parse(request_body(spec));
  EXPECT_EQ(j["prompt"], "hello");
  EXPECT_EQ(j["max_tokens"], 12);
  EXPECT_EQ(j["stream"], true);
  EXPECT_EQ(j["stream_options"]["include_usage"], true);
  EXPECT_EQ(j["ignore_eos"], true);
  EXPECT_FALSE(j.contains("messages"));
  spec.endpoint = "/v1/chat/completions";
  spec.ignore_eos = false;
  j = nlohmann::json::parse(request_body(spec));
  EXPECT_EQ(j["messages"][0]["role"], "user");
  EXPECT_EQ(j["messages"][0]["content"], "hello");
  EXPECT_FALSE(j.contains("prompt"));
  EXPECT_FALSE(j.contains("ignore_eos"));  // not sent unless asked: some servers reject unknown fields
}

TEST(RequestOutcome, TpotExcludesTheFirstToken) {
  RequestOutcome r;
  r.ttft_s = 0.2;
  r.e2e_s = 1.2;
  r.output_tokens = 11;
  EXPECT_DOUBLE_EQ(r.tpot_s(), 0.1);
  r.output_tokens = 1;
  EXPECT_EQ(r.tpot_s(), 0);
}

// Events at times in ms after a send at 0, through a StreamTimer.
RequestOutcome timed(const std::vector<std::pair<int, std::string>>& events, int end_ms) {
  StreamTimer t(0);
  for (const auto& [ms, data] : events) t.on_event(data, int64_t{ms} * 1'000'000);
  EXPECT_TRUE(t.done());
  return t.finish(int64_t{end_ms} * 1'000'000);
}

const char* const kEmpty = R"({"choices":[{"text":"","index":0,"finish_reason":null}]})";
const char* const kLast =
    R"({"choices":[{"text":"","index":0,"finish_reason":"length"}],"usage":{"completion_tokens":3,"prompt_tokens":9}})";

// llama-server's stream of tokens it renders as nothing: one empty chunk per token,
// then the finish with usage. Timed by those chunks.
TEST(StreamTimer, EmptyTokenChunksTimeAStreamWithoutText) {
  const RequestOutcome r = timed({{100, kEmpty}, {150, kEmpty}, {210, kEmpty}, {215, kLast}, {216, "[DONE]"}}, 220);
  EXPECT_TRUE(r.got_text);
  EXPECT_DOUBLE_EQ(r.ttft_s, 0.1);
  ASSERT_EQ(r.itl_s.size(), 2u);
  EXPECT_NEAR(r.itl_s[0], 0.05, 1e-12);
  EXPECT_NEAR(r.itl_s[1], 0.06, 1e-12);
  EXPECT_EQ(r.output_tokens, 3);
  EXPECT_EQ(r.prompt_tokens, 9);
  EXPECT_DOUBLE_EQ(r.e2e_s, 0.22);
}

// Text, when a stream has any, is what counts: the empty chunk before it is not a token.
TEST(StreamTimer, TextChunksWinOverEmptyOnes) {
  const RequestOutcome r = timed({{50, kEmpty},
                                  {100, R"({"choices":[{"text":"a","finish_reason":null}]})"},
                                  {130, R"({"choices":[{"text":"b","finish_reason":null}]})"},
                                  {140, kLast},
                                  {141, "[DONE]"}},
                                 150);
  EXPECT_DOUBLE_EQ(r.ttft_s, 0.1);
  ASSERT_EQ(r.itl_s.size(), 1u);
  EXPECT_NEAR(r.itl_s[0], 0.03, 1e-12);
}

// A chat stream's opening chunk (a role, empty content) is not a token, whether the
// answer has text or only empty tokens; llama-server's empty chat chunks have no role.
TEST(StreamTimer, AChatRoleChunkIsNeverAToken) {
  const char* const role = R"({"choices":[{"delta":{"role":"assistant","content":""},"finish_reason":null}]})";
  const char* const empty = R"({"choices":[{"delta":{"content":""},"finish_reason":null}]})";
  const char* const last = R"({"choices":[{"delta":{},"finish_reason":"length"}],"usage":{"completion_tokens":2}})";
  RequestOutcome r = timed({{5, role}, {80, empty}, {120, empty}, {121, last}, {122, "[DONE]"}}, 125);
  EXPECT_TRUE(r.got_text);
  EXPECT_DOUBLE_EQ(r.ttft_s, 0.08);
  r = timed({{5, role}, {90, R"({"choices":[{"delta":{"content":"hi"},"finish_reason":null}]})"}, {121, last},
             {122, "[DONE]"}},
            125);
  EXPECT_DOUBLE_EQ(r.ttft_s, 0.09);
  EXPECT_TRUE(r.itl_s.empty());
}

// Without a token count from the server, empty chunks say nothing: no TTFT.
TEST(StreamTimer, EmptyChunksWithoutUsageGiveNoTtft) {
  const RequestOutcome r = timed({{100, kEmpty}, {150, kEmpty}, {151, "[DONE]"}}, 160);
  EXPECT_FALSE(r.got_text);
  EXPECT_EQ(r.output_tokens, 0);
}

}  // namespace
}  // namespace llms::benchserve
