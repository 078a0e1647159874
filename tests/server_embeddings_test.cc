// POST /v1/embeddings against llama-server's embeddings of the same texts on
// stories260K (scripts/llama-cpp-embeddings.sh wrote them into tests/data: mean, cls
// and last pooling, normalized, F32 KV cache on both sides), and the request's shape:
// base64, normalize, dimensions, token inputs, errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "server_test_util.h"

namespace llms::test {
namespace {

// The bar: cosine >= 0.9999 per input. Both sides compute in F32 with an F32
// KV cache and differ only in the order of sums (matrix products, the mean over
// positions); on 64 dimensions of unit length that moves each component by ~1e-6, so
// the element bound 1e-4 still catches a pooling or norm that is wrong in one place.
constexpr double kMinCosine = 0.9999;
constexpr double kElementTolerance = 1e-4;

Json reference() {
  std::ifstream f(std::string(LLMSERVE_SOURCE_DIR) + "/tests/data/embeddings_stories260K.json");
  return Json::parse(f);
}

std::vector<double> vec(const Json& j) { return j.get<std::vector<double>>(); }

double cosine(const std::vector<double>& a, const std::vector<double>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

std::vector<double> decode_base64_floats(const std::string& s) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : 63;
  };
  std::string bytes;
  for (size_t i = 0; i + 3 < s.size(); i += 4) {
    const uint32_t chunk = (value(s[i]) << 18) | (value(s[i + 1]) << 12) | (s[i + 2] == '=' ? 0 : value(s[i + 2]) << 6) |
                           (s[i + 3] == '=' ? 0 : value(s[i + 3]));
    bytes += static_cast<char>(chunk >> 16);
    if (s[i + 2] != '=') bytes += static_cast<char>((chunk >> 8) & 0xff);
    if (s[i + 3] != '=') bytes += static_cast<char>(chunk & 0xff);
  }
  std::vector<double> out(bytes.size() / 4);
  for (size_t i = 0; i < out.size(); ++i) {
    float f = 0;
    std::memcpy(&f, bytes.data() + 4 * i, 4);  // little-endian, as the machine
    out[i] = f;
  }
  return out;
}

class Embeddings : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_stories()) GTEST_SKIP() << "needs " << shared_dir() << "/models/stories260K.gguf";
  }
  // Prefill chunks of 8 tokens: the longer texts are pooled across several passes.
  static std::unique_ptr<LlmServer> serve(const std::string& pooling) {
    return start_server(stories_path(), [&](ServeConfig& c) {
      c.engine.kv.k_type = DType::kF32;
      c.engine.kv.v_type = DType::kF32;
      c.engine.batching.max_batch_tokens = 8;
      c.engine.threads = 1;
      c.server.pooling = pooling;
    });
  }
  static Json embed(int port, const Json& body, int status = 200) {
    const HttpResult r = http_post(port, "/v1/embeddings", body);
    EXPECT_EQ(r.status, status) << r.body;
    return r.json();
  }
  static void expect_close(const Json& ours, const Json& theirs, const std::string& what) {
    const std::vector<double> a = vec(ours), b = vec(theirs);
    ASSERT_EQ(a.size(), b.size()) << what;
    EXPECT_GE(cosine(a, b), kMinCosine) << what;
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], kElementTolerance) << what << " [" << i << "]";
  }
};

// Every pooling, all texts in one request: each within the bar of llama-server's, in
// input order, and usage counts the same tokens llama-server's tokenizer made.
TEST_F(Embeddings, MatchLlamaServerForEachPooling) {
  const Json ref = reference();
  for (const std::string pooling : {"mean", "cls", "last"}) {
    auto server = serve(pooling);
    const Json& cases = ref["poolings"][pooling];
    Json texts = Json::array();
    size_t tokens = 0;
    for (const Json& c : cases) {
      texts.push_back(c["text"]);
      tokens += c["tokens"].size();
    }
    const Json j = embed(server->port(), {{"input", texts}, {"model", "stories260K"}});
    EXPECT_EQ(j["object"], "list");
    EXPECT_EQ(j["usage"]["prompt_tokens"], tokens);
    EXPECT_EQ(j["usage"]["total_tokens"], tokens);
    ASSERT_EQ(j["data"].size(), cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
      EXPECT_EQ(j["data"][i]["object"], "embedding");
      EXPECT_EQ(j["data"][i]["index"], i);
      expect_close(j["data"][i]["embedding"], cases[i]["embedding"], pooling + ": " + cases[i]["text"].get<std::string>());
    }
  }
}

// Without --pooling the model's metadata decides; stories260K names none, so mean.
// Token inputs embed as their text does; a completion of the same prompt first (its
// blocks in the prefix cache) changes nothing, since an embedding computes every
// position itself.
TEST_F(Embeddings, DefaultPoolingTokenInputsAndPrefixCache) {
  const Json ref = reference();
  auto server = serve("");
  const Json& c = ref["poolings"]["mean"][2];
  const HttpResult warm = http_post(server->port(), "/v1/completions",
                                    Json{{"prompt", c["text"]}, {"max_tokens", 2}, {"temperature", 0}});
  ASSERT_EQ(warm.status, 200) << warm.body;
  const Json by_text = embed(server->port(), {{"input", c["text"]}});
  expect_close(by_text["data"][0]["embedding"], c["embedding"], "text");
  const Json by_tokens = embed(server->port(), {{"input", c["tokens"]}});
  expect_close(by_tokens["data"][0]["embedding"], c["embedding"], "tokens");
  const Json lists = embed(server->port(), {{"input", Json::array({c["tokens"], ref["poolings"]["mean"][0]["tokens"]})}});
  ASSERT_EQ(lists["data"].size(), 2u);
  expect_close(lists["data"][1]["embedding"], ref["poolings"]["mean"][0]["embedding"], "token lists");
}

// base64 is the float32 values' bytes; normalize: false keeps the length, and
// normalizing it gives the default answer; dimensions equal to the width is accepted.
TEST_F(Embeddings, EncodingsAndNormalization) {
  auto server = serve("mean");
  const Json text = "The cat sat on the mat.";
  const Json floats = embed(server->port(), {{"input", text}, {"encoding_format", "float"}, {"dimensions", 64}});
  const Json b64 = embed(server->port(), {{"input", text}, {"encoding_format", "base64"}});
  const std::vector<double> f = vec(floats["data"][0]["embedding"]);
  ASSERT_TRUE(b64["data"][0]["embedding"].is_string());
  const std::vector<double> d = decode_base64_floats(b64["data"][0]["embedding"].get<std::string>());
  ASSERT_EQ(d.size(), f.size());
  for (size_t i = 0; i < f.size(); ++i) EXPECT_EQ(static_cast<float>(d[i]), static_cast<float>(f[i])) << i;
  double norm = 0;
  for (double x : f) norm += x * x;
  EXPECT_NEAR(norm, 1.0, 1e-5);
  const std::vector<double> raw = vec(embed(server->port(), {{"input", text}, {"normalize", false}})["data"][0]["embedding"]);
  double raw_norm = 0;
  for (double x : raw) raw_norm += x * x;
  raw_norm = std::sqrt(raw_norm);
  EXPECT_GT(std::abs(raw_norm - 1.0), 1e-3);  // the final norm's weights make it no unit vector
  for (size_t i = 0; i < f.size(); ++i) EXPECT_NEAR(raw[i] / raw_norm, f[i], 1e-6) << i;
}

TEST_F(Embeddings, Refusals) {
  auto server = serve("mean");
  const int port = server->port();
  auto param = [](const Json& j) { return j["error"]["param"]; };
  EXPECT_EQ(param(embed(port, {{"input", "x"}, {"dimensions", 32}}, 400)), "dimensions");
  EXPECT_EQ(param(embed(port, {{"input", "x"}, {"encoding_format", "int8"}}, 400)), "encoding_format");
  EXPECT_EQ(param(embed(port, Json{{"model", "stories260K"}}, 400)), "input");
  EXPECT_EQ(param(embed(port, {{"input", Json::array()}}, 400)), "input");
  EXPECT_EQ(param(embed(port, {{"input", Json::array({1, 100000})}}, 400)), "input");
  EXPECT_EQ(param(embed(port, {{"input", "x"}, {"truncate_prompt_tokens", 8}}, 400)), "truncate_prompt_tokens");
  EXPECT_EQ(embed(port, {{"input", "x"}, {"model", "other"}}, 404)["error"]["code"], "model_not_found");
  std::string long_text;
  for (int i = 0; i < 1200; ++i) long_text += "dog ";  // 2 tokens each: past the 2,048 context
  const Json too_long = embed(port, {{"input", long_text}}, 400);
  EXPECT_EQ(param(too_long), "input");
  EXPECT_EQ(too_long["error"]["code"], "context_length_exceeded");
}

}  // namespace
}  // namespace llms::test
