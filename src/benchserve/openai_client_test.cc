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

}  // namespace
}  // namespace llms::benchserve
