// The quality safety net end to end on stories260K: a server on a model root with
// --canary-auto aborts a canary whose weights are damaged (2% of the signs flipped) and
// one that loops (every input reads as one token), each well before 100 of its
// requests, with the reason in the log and in llmserve_quality_decisions_total; it
// promotes a Q8_0 requantization of the same model. With --canary-feedback-min a
// canary that people rate worse (POST /v1/feedback) is aborted on feedback, and one
// rated as well as the stable version is promoted. With --auto-rollback a deployed
// version whose validation perplexity drifts (the validation text changes under it)
// is rolled back.
#include <unistd.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <functional>
#include <random>

#include "deploy/model_root.h"
#include "io/gguf_file.h"
#include "deploy_test_util.h"
#include "server_test_util.h"
#include "tools/quantizer.h"

namespace llms::test {
namespace {

namespace fs = std::filesystem;

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// The F32 tensor `name` of the file's bytes, as floats to edit in place.
float* f32_tensor(std::string& bytes, const GgufFile& file, const GgufTensorInfo& t) {
  EXPECT_EQ(t.dtype, DType::kF32) << t.name;
  return reinterpret_cast<float*>(bytes.data() + file.data_offset() + t.offset);
}

// A copy of the model with `share` of its matrix weights' signs flipped (seeded).
std::string flip_signs(const std::string& out, double share) {
  std::string bytes = read_bytes(stories_path());
  auto file = GgufFile::open(stories_path());
  std::mt19937 rng(1234);
  std::bernoulli_distribution flip(share);
  for (const auto& t : file->tensors()) {
    if (t.n_dims != 2) continue;  // norms keep their signs
    float* w = f32_tensor(bytes, *file, t);
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      if (flip(rng)) w[i] = -w[i];
    }
  }
  return write_text(out, bytes);
}

// A copy that loops: every token embeds as token `t`, so every position sees the same
// input and the model predicts the same distribution everywhere; the output head is
// sharpened so that its top token takes nearly all the mass.
std::string looping_copy(const std::string& out) {
  std::string bytes = read_bytes(stories_path());
  auto file = GgufFile::open(stories_path());
  const GgufTensorInfo* emb = file->find_tensor("token_embd.weight");
  const GgufTensorInfo* head = file->find_tensor("output.weight");
  EXPECT_TRUE(emb && head) << "stories260K has an untied output head";
  const int64_t dim = emb->ne[0], vocab = emb->ne[1];
  float* e = f32_tensor(bytes, *file, *emb);
  const int64_t t = 300;
  for (int64_t row = 0; row < vocab; ++row) std::memcpy(e + row * dim, e + t * dim, sizeof(float) * dim);
  float* h = f32_tensor(bytes, *file, *head);
  for (int64_t i = 0; i < head->num_elements(); ++i) h[i] *= 20;
  return write_text(out, bytes);
}

// A Q8_0 requantization of the model.
std::string q8_copy(const std::string& out) {
  QuantizeOptions q;
  q.type = DType::kQ8_0;
  EXPECT_TRUE(quantize_model(stories_path(), out, q).ok());
  return out;
}

// The log's line of the automatic decision, shown in the test's output ("" if none).
std::string decision_line(const std::string& log) {
  const size_t at = log.find("automatically");
  if (at == std::string::npos) return "";
  const size_t begin = log.rfind('\n', at) + 1, end = log.find('\n', at);
  const std::string line = log.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
  std::cerr << line << "\n";
  return line;
}

// Whether the monitor has taken every sampled output of both versions (an absent
// version has none).
bool scoring_caught_up(int port, const std::string& candidate) {
  const std::string m = http_get(port, "/metrics").body;
  for (const std::string& v : {std::string("v1"), candidate}) {
    if (metric(m, "llmserve_quality_samples_pending{version=\"" + v + "\"}") > 0) return false;
  }
  return true;
}

// Sends sampled completions (distinct prompts) until no canary runs; returns how many
// of them the candidate served (-1: still undecided after `max_requests`). After each
// request it waits for the scorer to catch up: a client with pauses, so that the test
// counts requests to a decision the same on a loaded machine as on an idle one.
int drive_until_decided(int port, const std::string& candidate, int max_requests) {
  int served = 0;
  for (int i = 0; i < max_requests; ++i) {
    const HttpResult r = http_post(port, "/v1/completions",
                                   Json{{"prompt", "Once upon a time " + std::to_string(i)}, {"max_tokens", 32},
                                        {"temperature", 0.8}, {"seed", i}});
    EXPECT_EQ(r.status, 200) << r.body;
    served += r.header("x-llmserve-model-version") == candidate;
    EXPECT_TRUE(poll_until([&] { return scoring_caught_up(port, candidate); }, 30));
    if (http_get(port, "/admin/versions", kAuth).json()["state"]["candidate"].is_null()) return served;
  }
  ADD_FAILURE() << "undecided after " << max_requests << " requests, " << served << " of them the candidate's: "
                << http_get(port, "/admin/versions", kAuth).body;
  return -1;
}

// The canary-auto server the scenarios share: the decision on quality, errors and
// abnormal outputs at their defaults; latency off (on a loaded CI machine two
// engines' inter-token latencies differ whatever their weights); the scorer at normal
// CPU priority (on a machine other work saturates, nice 19 would get no time).
// `fast_scoring`: half the requests scored and a budget that keeps up with this test's
// rate (a promotion needs about 100 scored outputs per side at the default margin).
std::unique_ptr<LlmServer> canary_server(const std::string& dir, bool fast_scoring = false) {
  return start_on_root(dir, [&](ServeConfig& c) {
    c.deploy.canary_auto.requests = 60;
    c.deploy.canary_auto.max_latency_ratio = 1e9;
    c.deploy.cross.nice = 0;
    if (fast_scoring) {
      c.deploy.cross.share = 0.5;
      c.deploy.cross.tokens_per_s = 1e5;
    }
  });
}

double decisions(int port, const std::string& decision, const std::string& reason) {
  const double v = metric(port, "llmserve_quality_decisions_total{decision=\"" + decision + "\",reason=\"" + reason + "\"}");
  return std::isnan(v) ? 0 : v;
}

TEST(QualityScenarioTest, DamagedCanaryIsAbortedOnQuality) {
  if (!have_stories()) GTEST_SKIP() << "needs ../shared/models/stories260K.gguf";
  Root r = make_root("damaged");
  const std::string damaged = flip_signs(temp_path("damaged.gguf"), 0.02);
  // The loosened gate of the report: the damaged copy gets past it.
  ASSERT_TRUE(r.root.install("damaged", damaged, false,
                             write_text(temp_path("damaged.toml"), "gate_max_kl = 3\ngate_min_top1 = 0.25\n")).ok());
  auto server = canary_server(r.dir);
  const int port = server->port();
  const HttpResult d = admin(port, "deploy", {{"version", "damaged"}, {"canary", 0.5}});
  ASSERT_EQ(d.status, 200) << d.body;
  ::testing::internal::CaptureStderr();
  const int served = drive_until_decided(port, "damaged", 400);
  // The decision is counted and logged right after it takes effect.
  EXPECT_TRUE(poll_until([&] { return decisions(port, "aborted", "quality") == 1; }, 10));
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_GE(served, 0) << "never decided";
  EXPECT_LT(served, 100);
  EXPECT_EQ(http_get(port, "/admin/versions", kAuth).json()["state"]["current"], "v1");
  const std::string line = decision_line(log);
  EXPECT_NE(line.find("canary damaged aborted automatically"), std::string::npos) << log;
  EXPECT_NE(line.find("quality is worse"), std::string::npos) << log;
  // The stable version, now alone, keeps its figures of the comparison.
  EXPECT_GT(metric(port, "llmserve_quality_cross_perplexity{version=\"v1\"}"), 1);
  fs::remove(damaged);
}

TEST(QualityScenarioTest, LoopingCanaryIsAborted) {
  if (!have_stories()) GTEST_SKIP() << "needs ../shared/models/stories260K.gguf";
  Root r = make_root("loop");
  const std::string looping = looping_copy(temp_path("loop.gguf"));
  ASSERT_TRUE(r.root.install("loop", looping, false,
                             write_text(temp_path("loop.toml"), "gate_max_kl = 1000\ngate_min_top1 = 0\n")).ok());
  auto server = canary_server(r.dir);
  const int port = server->port();
  ASSERT_EQ(admin(port, "deploy", {{"version", "loop"}, {"canary", 0.5}}).status, 200);
  // Its outputs are loops, counted as such.
  const HttpResult one = http_post(port, "/v1/completions", Json{{"prompt", "Lily"}, {"max_tokens", 32}},
                                   {{"x-llmserve-version", "loop"}});
  ASSERT_EQ(one.status, 200);
  EXPECT_EQ(metric(port, "llmserve_abnormal_outputs_total{version=\"loop\",kind=\"repetition\"}"), 1) << one.body;
  ::testing::internal::CaptureStderr();
  const int served = drive_until_decided(port, "loop", 400);
  EXPECT_TRUE(poll_until([&] {
    return decisions(port, "aborted", "quality") + decisions(port, "aborted", "abnormal") == 1;
  }, 10));
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_GE(served, 0) << "never decided";
  EXPECT_LT(served, 100);
  EXPECT_EQ(http_get(port, "/admin/versions", kAuth).json()["state"]["current"], "v1");
  EXPECT_NE(decision_line(log).find("canary loop aborted automatically"), std::string::npos) << log;
  fs::remove(looping);
}

TEST(QualityScenarioTest, RequantizedCanaryIsPromoted) {
  if (!have_stories()) GTEST_SKIP() << "needs ../shared/models/stories260K.gguf";
  Root r = make_root("q8");
  const std::string q8 = q8_copy(temp_path("q8.gguf"));
  ASSERT_TRUE(r.root.install("q8", q8, false).ok());
  auto server = canary_server(r.dir, true);
  const int port = server->port();
  ASSERT_EQ(admin(port, "deploy", {{"version", "q8"}, {"canary", 0.5}}).status, 200);
  ::testing::internal::CaptureStderr();
  const int served = drive_until_decided(port, "q8", 1000);
  EXPECT_TRUE(poll_until([&] { return decisions(port, "promoted", "all_within_margins") == 1; }, 10));
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_GE(served, 60) << "never decided, or before canary_auto's minimum";
  EXPECT_EQ(http_get(port, "/admin/versions", kAuth).json()["state"]["current"], "q8");
  EXPECT_NE(decision_line(log).find("canary q8 promoted automatically"), std::string::npos) << log;
  EXPECT_EQ(r.root.current(), "q8");
  fs::remove(q8);
}

// The feedback rule's server: a canary of the same weights (only the ratings tell the
// versions apart), decided on errors, abnormal outputs and feedback (no cross-scoring;
// latency off, as above); feedback decides once each side has 20 ratings, within a
// margin of half a rating point.
constexpr int kFeedbackMin = 20;
constexpr int kFeedbackRequests = 30;

std::unique_ptr<LlmServer> feedback_canary_server(const std::string& name) {
  Root r = make_root(name);
  EXPECT_TRUE(r.root.install("v2", stories_path(), true).ok());
  auto server = start_on_root(r.dir, [&](ServeConfig& c) {
    c.deploy.canary_auto.requests = kFeedbackRequests;
    c.deploy.canary_auto.max_latency_ratio = 1e9;
    c.deploy.canary_auto.feedback_min = kFeedbackMin;
    c.deploy.canary_auto.feedback_margin = 0.5;
    c.deploy.cross.share = 0;
  });
  const HttpResult d = admin(server->port(), "deploy", {{"version", "v2"}, {"canary", 0.5}});
  EXPECT_EQ(d.status, 200) << d.body;
  return server;
}

// Thumbs a person gives the k-th answer of a version: three in four up and one neutral
// (`good`), or three in four down and one neutral.
int thumbs(bool good, int k) { return k % 4 == 0 ? 0 : good ? 1 : -1; }

// Sends completions and rates each answer through POST /v1/feedback, the candidate's
// by `candidate_good` and the stable version's always good, until no canary runs;
// returns the candidate's ratings by then (-1: still undecided after `max_requests`).
// A rating wakes the deployer, which decides on it before the next tick.
int rate_until_decided(int port, bool candidate_good, int max_requests) {
  int rated[2] = {0, 0};  // [stable, candidate]
  for (int i = 0; i < max_requests; ++i) {
    const HttpResult r = http_post(port, "/v1/completions",
                                   Json{{"prompt", "Once upon a time " + std::to_string(i)}, {"max_tokens", 8},
                                        {"temperature", 0.8}, {"seed", i}});
    EXPECT_EQ(r.status, 200) << r.body;
    const bool cand = r.header("x-llmserve-model-version") == "v2";
    const int rating = thumbs(!cand || candidate_good, rated[cand]++);
    const HttpResult f = http_post(port, "/v1/feedback", Json{{"id", r.json()["id"]}, {"rating", rating}});
    EXPECT_EQ(f.status, 200) << f.body;
    if (http_get(port, "/admin/versions", kAuth).json()["state"]["candidate"].is_null()) return rated[1];
  }
  ADD_FAILURE() << "undecided after " << max_requests << " requests, " << rated[1] << " of them the candidate's: "
                << http_get(port, "/admin/versions", kAuth).body;
  return -1;
}

struct FeedbackOutcome {
  int rated = -1;    // the candidate's ratings when the test saw the canary decided
  std::string line;  // the log's line of the decision
};

// A feedback canary server's scenario, until the automatic decision (`decision`,
// `reason`) is counted.
FeedbackOutcome feedback_scenario(bool candidate_good, const std::string& decision, const std::string& reason) {
  auto server = feedback_canary_server(candidate_good ? "feedback_good" : "feedback_bad");
  const int port = server->port();
  ::testing::internal::CaptureStderr();
  FeedbackOutcome o;
  o.rated = rate_until_decided(port, candidate_good, 600);
  EXPECT_TRUE(poll_until([&] { return decisions(port, decision, reason) == 1; }, 10));
  o.line = decision_line(::testing::internal::GetCapturedStderr());
  // Only the one decision, and the figures a dashboard or an alert compares.
  EXPECT_EQ(decisions(port, "aborted", "feedback") + decisions(port, "promoted", "all_within_margins"), 1);
  EXPECT_EQ(http_get(port, "/admin/versions", kAuth).json()["state"]["current"], candidate_good ? "v2" : "v1");
  EXPECT_GT(metric(port, "llmserve_feedback_rating_mean{version=\"v1\"}"), 0);
  const double candidate_mean = metric(port, "llmserve_feedback_rating_mean{version=\"v2\"}");
  EXPECT_TRUE(candidate_good ? candidate_mean > 0 : candidate_mean < 0) << candidate_mean;
  return o;
}

TEST(QualityScenarioTest, CanaryRatedWorseIsAbortedOnFeedback) {
  if (!have_stories()) GTEST_SKIP() << "needs ../shared/models/stories260K.gguf";
  const FeedbackOutcome o = feedback_scenario(false, "aborted", "feedback");
  EXPECT_GE(o.rated, kFeedbackMin) << "decided before the minimum of ratings";
  EXPECT_LT(o.rated, 100);
  EXPECT_NE(o.line.find("canary v2 aborted automatically"), std::string::npos) << o.line;
  EXPECT_NE(o.line.find("feedback is worse"), std::string::npos) << o.line;
}

// The control: rated as the stable version is, the canary is promoted on its ratings,
// not before feedback_min of them, nor before canary_auto's requests.
TEST(QualityScenarioTest, CanaryRatedAsWellIsPromoted) {
  if (!have_stories()) GTEST_SKIP() << "needs ../shared/models/stories260K.gguf";
  const FeedbackOutcome o = feedback_scenario(true, "promoted", "all_within_margins");
  EXPECT_GE(o.rated, std::max(kFeedbackMin, kFeedbackRequests));
  EXPECT_NE(o.line.find("canary v2 promoted automatically"), std::string::npos) << o.line;
  EXPECT_NE(o.line.find("feedback: no_worse"), std::string::npos) << o.line;
}

// The drift rule: the validation text is read again at each check, so a text the
// model finds far less probable than at deploy stands in for weights damaged in memory.
TEST(QualityScenarioTest, DriftingVersionIsRolledBack) {
  if (!have_stories()) GTEST_SKIP() << "needs ../shared/models/stories260K.gguf";
  Root r = make_root("drift");
  const std::string q8 = q8_copy(temp_path("drift_q8.gguf"));
  ASSERT_TRUE(r.root.install("v2", q8, false).ok());
  const std::string text = write_text(temp_path("validation.txt"),
                                      "Once upon a time, there was a little girl named Lily. She liked to play in the "
                                      "park with her dog. One day, she saw a big red ball under a tree.");
  auto server = start_on_root(r.dir, [&](ServeConfig& c) {
    c.deploy.quality_interval_s = 0.2;
    c.deploy.quality_text_path = text;
    c.deploy.auto_rollback = true;
  });
  const int port = server->port();
  ASSERT_EQ(admin(port, "deploy", {{"version", "v2"}}).status, 200);
  // Checks on the unchanged text read no drift: v2 keeps serving.
  ASSERT_TRUE(poll_until([&] { return metric(port, "llmserve_quality_ppl_drift{version=\"v2\"}") > 0; }, 20));
  EXPECT_LT(metric(port, "llmserve_quality_ppl_drift{version=\"v2\"}"), 1.2);
  EXPECT_EQ(decisions(port, "rolled_back", "drift"), 0);
  write_text(text, "zq xv jkq wpf vbn qqz xjz kfw pqv zzx jjq wvb xkq fzp qjx vwz kxq zjf pvq wxz qkj zvx");
  ASSERT_TRUE(poll_until([&] { return decisions(port, "rolled_back", "drift") == 1; }, 20));
  EXPECT_EQ(http_get(port, "/admin/versions", kAuth).json()["state"]["current"], "v1");
  EXPECT_EQ(r.root.current(), "v1");
  // The version rolled back to drifts as much, but a rollback never rolls back itself.
  EXPECT_EQ(decisions(port, "rolled_back", "drift"), 1);
  fs::remove(q8);
}

}  // namespace
}  // namespace llms::test
