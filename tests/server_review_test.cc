// Review sampling and feedback end to end: a sample of finished requests in the review
// log (redacted, never a request that opted out or came with an excluded key), rotation
// by size, and POST /v1/feedback's answers and per-version metrics.
#include <unistd.h>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "server_test_util.h"

namespace llms::test {
namespace {

namespace fs = std::filesystem;

constexpr const char* kKeyA = "review-test-key-aaaaaaaaaaaa";
constexpr const char* kKeyB = "review-test-key-bbbbbbbbbbbb";
constexpr const char* kKeyQuiet = "review-test-key-quiet-qqqqqq";

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/" + std::to_string(getpid()) + "_review_" + name;
}

std::string write_text(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

Headers bearer(const std::string& key) { return {{"Authorization", "Bearer " + key}}; }

// Every line of the file, parsed; a line that is not JSON fails the test.
std::vector<Json> read_lines(const std::string& path) {
  std::vector<Json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    Json j = Json::parse(line, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << line;
    out.push_back(std::move(j));
  }
  return out;
}

Json chat(const std::string& content) {
  return Json{{"messages", Json::array({Json{{"role", "user"}, {"content", content}}})}, {"max_tokens", 3},
              {"temperature", 0}};
}

TEST(ReviewTest, SamplesAShareRedactedAndNeverAnOptOut) {
  if (!have_stories()) GTEST_SKIP() << "needs ../shared/models/stories260K.gguf";
  const std::string log = temp_path("sample.jsonl");
  fs::remove(log);
  auto server = start_server(stories_path(), [&](ServeConfig& c) {
    c.server.review_sample = 0.05;
    c.server.review_log = log;
    c.server.review_seed = 7;
    c.server.review_redact = "secret-[0-9]+";
  });
  const int port = server->port();
  constexpr int kRequests = 400;
  for (int i = 0; i < kRequests; ++i) {
    const std::string text = "Mail alice.smith@example.com or call +1 (555) 123-4567, card 4111 1111 1111 1111, "
                             "code secret-" + std::to_string(i);
    ASSERT_EQ(http_post(port, "/v1/chat/completions", chat(text)).status, 200);
    if (i % 10 == 0) {  // opted out: never in the log
      Json quiet = chat("opted-out request " + std::to_string(i));
      quiet["review"] = false;
      ASSERT_EQ(http_post(port, "/v1/chat/completions", quiet).status, 200);
    }
  }
  const std::vector<Json> lines = read_lines(log);
  // 400 draws at 5%: 20 expected; 4 standard deviations of the binomial either side.
  const double sd = std::sqrt(kRequests * 0.05 * 0.95);
  EXPECT_GE(static_cast<double>(lines.size()), 20 - 4 * sd);
  EXPECT_LE(static_cast<double>(lines.size()), 20 + 4 * sd);
  EXPECT_GT(lines.size(), 0u);
  for (const Json& j : lines) {
    const std::string text = j.dump();
    EXPECT_EQ(j["type"], "request");
    EXPECT_EQ(j["kind"], "chat");
    EXPECT_TRUE(j["id"].is_string() && j["version"].is_string() && j["time"].is_string()) << text;
    EXPECT_TRUE(j["answer"].is_string() && j["finish_reason"].is_string() && j["latency_s"].is_number()) << text;
    const std::string content = j["messages"][0]["content"];
    EXPECT_EQ(content, "Mail [email] or call [phone], card [card], code [redacted]") << content;
    EXPECT_EQ(text.find("opted-out"), std::string::npos) << text;
  }
  fs::remove(log);
}

TEST(ReviewTest, ExcludedKeysAreNeverReviewedAndTheLogRotates) {
  if (!have_stories()) GTEST_SKIP() << "needs ../shared/models/stories260K.gguf";
  const std::string log = temp_path("rotate.jsonl");
  for (const char* suffix : {"", ".1", ".2", ".3"}) fs::remove(log + suffix);
  const std::string keys = write_text(temp_path("keys"), std::string(kKeyA) + "\n" + kKeyQuiet + "\n");
  const std::string quiet = write_text(temp_path("quiet"), std::string(kKeyQuiet) + "\n");
  auto server = start_server(stories_path(), [&](ServeConfig& c) {
    c.server.api_key_file = keys;
    c.server.review_sample = 1;
    c.server.review_log = log;
    c.server.review_exclude_key_file = quiet;
    c.server.review_log_max_bytes = 2000;
    c.server.review_log_keep = 2;
  });
  const int port = server->port();
  for (int i = 0; i < 30; ++i) {
    ASSERT_EQ(http_post(port, "/v1/completions", Json{{"prompt", "from A " + std::to_string(i)}, {"max_tokens", 2}},
                        bearer(kKeyA)).status, 200);
    ASSERT_EQ(http_post(port, "/v1/completions", Json{{"prompt", "from quiet " + std::to_string(i)}, {"max_tokens", 2}},
                        bearer(kKeyQuiet)).status, 200);
  }
  size_t total = 0;
  for (const char* suffix : {"", ".1", ".2"}) {
    ASSERT_TRUE(fs::exists(log + suffix)) << suffix;
    EXPECT_LE(fs::file_size(log + suffix), 2000u) << suffix;
    for (const Json& j : read_lines(log + suffix)) {
      ++total;
      EXPECT_EQ(j["prompt"].get<std::string>().rfind("from A ", 0), 0u) << j.dump();
    }
  }
  EXPECT_FALSE(fs::exists(log + ".3"));  // keep = 2
  EXPECT_GT(total, 5u);
  EXPECT_LT(total, 30u);  // the oldest were rotated away
}

TEST(FeedbackTest, OneRatingPerKeyAndVersionMetrics) {
  if (!have_stories()) GTEST_SKIP() << "needs ../shared/models/stories260K.gguf";
  const std::string log = temp_path("feedback.jsonl");
  fs::remove(log);
  const std::string keys = write_text(temp_path("fkeys"), std::string(kKeyA) + "\n" + kKeyB + "\n");
  auto server = start_server(stories_path(), [&](ServeConfig& c) {
    c.server.api_key_file = keys;
    c.server.review_sample = 1;
    c.server.review_log = log;
  });
  const int port = server->port();
  const HttpResult a = http_post(port, "/v1/completions", Json{{"prompt", "Once"}, {"max_tokens", 2}}, bearer(kKeyA));
  ASSERT_EQ(a.status, 200);
  const std::string id = a.json()["id"];
  const std::string version = a.header("x-llmserve-model-version");
  auto rate = [&](const Json& body, const char* key) { return http_post(port, "/v1/feedback", body, bearer(key)); };

  EXPECT_EQ(http_post(port, "/v1/feedback", Json{{"id", id}, {"rating", 1}}).status, 401);
  HttpResult r = rate({{"id", id}, {"rating", -1}, {"labels", Json::array({"complaint", "wrong"})}, {"comment", "bob@example.com"}}, kKeyA);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["version"], version);
  r = rate({{"id", id}, {"rating", 1}}, kKeyA);
  EXPECT_EQ(r.status, 409) << r.body;
  EXPECT_EQ(rate({{"id", id}, {"rating", 1}}, kKeyB).status, 200);
  r = rate({{"id", "cmpl-unknown"}, {"rating", 1}}, kKeyB);
  EXPECT_EQ(r.status, 404) << r.body;
  for (const Json& bad : {Json{{"id", id}, {"rating", 3}}, Json{{"id", id}, {"rating", 7}},
                          Json{{"id", id}, {"rating", "good"}}, Json{{"id", id}},
                          Json{{"id", id}, {"rating", 0}, {"labels", Json::array({"Not A Label!"})}}}) {
    r = rate(bad, kKeyB);
    EXPECT_EQ(r.status, 400) << bad.dump() << " " << r.body;
  }
  const std::string v = "version=\"" + version + "\"";
  EXPECT_EQ(metric(port, "llmserve_feedback_ratings_total{" + v + ",rating=\"-1\"}"), 1);
  EXPECT_EQ(metric(port, "llmserve_feedback_ratings_total{" + v + ",rating=\"1\"}"), 1);
  EXPECT_EQ(metric(port, "llmserve_feedback_rating_mean{" + v + "}"), 0);
  EXPECT_EQ(metric(port, "llmserve_feedback_labels_total{" + v + ",label=\"complaint\"}"), 1);
  // The ratings are in the review log beside the answer, the comment redacted.
  int feedback_lines = 0;
  for (const Json& j : read_lines(log)) {
    if (j["type"] != "feedback") continue;
    ++feedback_lines;
    EXPECT_EQ(j["id"], id);
    EXPECT_EQ(j.dump().find("bob@"), std::string::npos);
  }
  EXPECT_EQ(feedback_lines, 2);
}

}  // namespace
}  // namespace llms::test
