// Early exit (early_exit.h) on stories260K: exact when it cannot exit, its exits and
// the K/V it fills checked against the independent double-precision reference, other
// sequences of a batch untouched, and bad settings refused.
#include "model/early_exit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "model/testing/double_reference.h"
#include "model/model.h"

namespace llms {
namespace {

const std::string kStories = std::string(LLMSERVE_SHARED_DIR) + "/models/stories260K.gguf";
constexpr int kBlock = 8;

struct Fixture {
  std::unique_ptr<Model> model;
  std::vector<int32_t> tokens;  // BOS and the model's greedy continuation: text the model finds easy
};

const Fixture& fixture() {
  static Fixture f;
  if (f.model) return f;
  f.model = Model::load(kStories).value();
  const Model& m = *f.model;
  KvCache kv(m.kv_config(16, kBlock, DType::kF32, DType::kF32));
  std::vector<int32_t> table(16);
  for (int32_t b = 0; b < 16; ++b) table[static_cast<size_t>(b)] = 15 - b;  // scattered
  ForwardState s;
  ThreadPool pool(2);
  ForwardOutput out;
  f.tokens = {1};
  while (f.tokens.size() < 48) {
    SequenceChunk c{std::span(f.tokens).last(1), static_cast<int64_t>(f.tokens.size()) - 1, table};
    EXPECT_TRUE(m.forward({&c, 1}, kv, s, pool, out).ok());
    f.tokens.push_back(static_cast<int32_t>(std::max_element(out.row(0), out.row(0) + out.n_vocab) - out.row(0)));
  }
  return f;
}

// Every position's logits (and the trace of each pass): a prefill of `prefill` tokens,
// then one token at a time, on a fresh F32 cache of scattered blocks. `exit` null: the
// plain forward.
struct PassRun {
  std::vector<std::vector<float>> rows;
  std::vector<int32_t> exit_layer;  // per position
  std::vector<int32_t> lens_top;    // per position and exit point
  std::vector<float> lens_p;
  std::unique_ptr<KvCache> kv;
  std::vector<int32_t> table;
};

PassRun run(const Model& m, const std::vector<int32_t>& tokens, size_t prefill, const EarlyExitConfig* exit,
        bool lens = false) {
  PassRun r;
  const int32_t blocks = static_cast<int32_t>(tokens.size() / kBlock + 1);
  r.kv = std::make_unique<KvCache>(m.kv_config(blocks, kBlock, DType::kF32, DType::kF32));
  for (int32_t b = blocks - 1; b >= 0; --b) r.table.push_back(b);
  ForwardState s;
  ExitTrace trace;
  trace.lens = lens;
  s.set_exit_trace(&trace);
  ThreadPool pool(2);
  ForwardOutput out;
  for (size_t at = 0; at < tokens.size();) {
    const size_t n = at == 0 ? prefill : 1;
    SequenceChunk c{std::span(tokens).subspan(at, n), static_cast<int64_t>(at), r.table, LogitsWanted::kAll, 0};
    const Status st = exit ? m.forward({&c, 1}, *r.kv, s, pool, *exit, out) : m.forward({&c, 1}, *r.kv, s, pool, out);
    EXPECT_TRUE(st.ok()) << st.to_string();
    for (size_t i = 0; i < n; ++i) {
      r.rows.emplace_back(out.row(static_cast<int64_t>(i)), out.row(static_cast<int64_t>(i)) + out.n_vocab);
      if (exit) {
        EXPECT_EQ(out.exit_layer[i], trace.exit_layer[i]);
        r.exit_layer.push_back(trace.exit_layer[i]);
      }
    }
    r.lens_top.insert(r.lens_top.end(), trace.lens_top.begin(), trace.lens_top.end());
    r.lens_p.insert(r.lens_p.end(), trace.lens_p.begin(), trace.lens_p.end());
    at += n;
  }
  return r;
}

void expect_identical(const PassRun& a, const PassRun& b) {
  ASSERT_EQ(a.rows.size(), b.rows.size());
  for (size_t p = 0; p < a.rows.size(); ++p) {
    ASSERT_EQ(std::memcmp(a.rows[p].data(), b.rows[p].data(), a.rows[p].size() * sizeof(float)), 0) << "position " << p;
  }
}

#define NEEDS_STORIES() \
  if (!std::filesystem::exists(kStories)) GTEST_SKIP() << "needs " << kStories

TEST(EarlyExitTest, ThresholdOneReadsEveryExitPointAndChangesNothing) {
  NEEDS_STORIES();
  const Fixture& f = fixture();
  const Model& m = *f.model;
  const PassRun plain = run(m, f.tokens, 9, nullptr);
  EarlyExitConfig never;
  never.layers = {1, 2, 3, 4};
  never.threshold = 1.0;
  const PassRun lens = run(m, f.tokens, 9, &never, /*lens=*/true);
  expect_identical(plain, lens);
  for (int32_t l : lens.exit_layer) EXPECT_EQ(l, m.config().n_layer);
  // The heads were read at every point: the machinery ran, and exited nothing.
  ASSERT_EQ(lens.lens_p.size(), f.tokens.size() * 4);
  for (size_t i = 0; i < lens.lens_p.size(); ++i) {
    EXPECT_GT(lens.lens_p[i], 0.0f);
    EXPECT_LE(lens.lens_p[i], 1.0f);
    EXPECT_GE(lens.lens_top[i], 0);
  }
  // Disabled (no exit layers) is the plain pass too.
  EarlyExitConfig none;
  none.threshold = 0.5;
  expect_identical(plain, run(m, f.tokens, 9, &none));
}

TEST(EarlyExitTest, ExitsAndFilledKeysMatchTheDoubleReference) {
  NEEDS_STORIES();
  const Fixture& f = fixture();
  const Model& m = *f.model;
  const int n_layer = m.config().n_layer;
  EarlyExitConfig exit;
  exit.layers = {2, 3, 4};
  exit.threshold = 0.5;
  // A prefill of 20 (exits inside a chunk split its rows), then decodes.
  const PassRun got = run(m, f.tokens, 20, &exit);
  int exited = 0;
  for (int32_t l : got.exit_layer) exited += l < n_layer;
  ASSERT_GT(exited, 3) << "no exits to check: the threshold is too high for this text";
  ASSERT_LT(exited, static_cast<int>(f.tokens.size())) << "every token exited: nothing runs full depth";

  auto file = GgufFile::open(kStories);
  ASSERT_TRUE(file.ok());
  const std::vector<int> exits(got.exit_layer.begin(), got.exit_layer.end());
  const reference::ExitReference ref = reference::reference_with_exits(*file, f.tokens, exits);
  for (size_t p = 0; p < f.tokens.size(); ++p) {
    const std::vector<float>& row = got.rows[p];
    const reference::Vec& want = ref.logits[p];
    double diff = 0, scale = 0;
    for (size_t j = 0; j < want.size(); ++j) {
      diff = std::max(diff, std::abs(row[j] - want[j]));
      scale = std::max(scale, std::abs(want[j]));
    }
    EXPECT_LT(diff / scale, 1e-4) << "position " << p << " (exit layer " << exits[p] << ")";
    if (exits[p] < n_layer) {
      // The emitted token is the argmax of the intermediate head, and it was confident.
      const auto ref_top = std::max_element(want.begin(), want.end()) - want.begin();
      EXPECT_EQ(head_top(row.data(), static_cast<int64_t>(row.size())).token, ref_top) << "position " << p;
      double sum = 0;
      for (double v : want) sum += std::exp(v - want[static_cast<size_t>(ref_top)]);
      EXPECT_GE(1.0 / sum, exit.threshold - 1e-4) << "position " << p;
    }
  }
  // Every layer's keys and values in the cache, the skipped layers' included.
  const int kv_dim = m.config().kv_dim();
  std::vector<float> k(static_cast<size_t>(kv_dim)), v(static_cast<size_t>(kv_dim));
  for (int l = 0; l < n_layer; ++l) {
    const KvLayerView layer = got.kv->layer(l);
    for (size_t p = 0; p < f.tokens.size(); ++p) {
      kv_load_row(layer, true, got.table[p / kBlock], static_cast<int>(p % kBlock), k.data());
      kv_load_row(layer, false, got.table[p / kBlock], static_cast<int>(p % kBlock), v.data());
      for (int i = 0; i < kv_dim; ++i) {
        ASSERT_NEAR(k[static_cast<size_t>(i)], ref.keys[static_cast<size_t>(l)][p][static_cast<size_t>(i)], 1e-4)
            << "layer " << l << " position " << p << " exit " << exits[p];
        ASSERT_NEAR(v[static_cast<size_t>(i)], ref.values[static_cast<size_t>(l)][p][static_cast<size_t>(i)], 1e-4)
            << "layer " << l << " position " << p << " exit " << exits[p];
      }
    }
  }
}

// What the engine relies on after a preemption: recomputing exited positions in one
// prefill chunk makes the same exit decisions and stores the same keys and values as
// computing them one decode at a time.
TEST(EarlyExitTest, RecomputingInOneChunkRepeatsEveryDecision) {
  NEEDS_STORIES();
  const Fixture& f = fixture();
  const Model& m = *f.model;
  EarlyExitConfig exit;
  exit.layers = {1, 2, 3, 4};
  exit.threshold = 0.4;
  const PassRun stepwise = run(m, f.tokens, 1, &exit);
  const PassRun at_once = run(m, f.tokens, f.tokens.size(), &exit);
  EXPECT_EQ(stepwise.exit_layer, at_once.exit_layer);
  int exited = 0;
  for (int32_t l : stepwise.exit_layer) exited += l < m.config().n_layer;
  EXPECT_GT(exited, 3);
  expect_identical(stepwise, at_once);
  const int kv_dim = m.config().kv_dim();
  std::vector<float> a(static_cast<size_t>(kv_dim)), b(a.size());
  for (int l = 0; l < m.config().n_layer; ++l) {
    for (size_t p = 0; p < f.tokens.size(); ++p) {
      for (bool is_k : {true, false}) {
        kv_load_row(stepwise.kv->layer(l), is_k, stepwise.table[p / kBlock], static_cast<int>(p % kBlock), a.data());
        kv_load_row(at_once.kv->layer(l), is_k, at_once.table[p / kBlock], static_cast<int>(p % kBlock), b.data());
        ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << "layer " << l << " position " << p;
      }
    }
  }
}

// Two sequences in each pass, one allowed to exit and one not: the second gets the
// plain forward's logits bit for bit, the first what it gets alone with early exit.
TEST(EarlyExitTest, ABatchedSequenceThatMayNotExitIsUntouched) {
  NEEDS_STORIES();
  const Fixture& f = fixture();
  const Model& m = *f.model;
  EarlyExitConfig exit;
  exit.layers = {2, 3};
  exit.threshold = 0.5;
  const PassRun alone_exit = run(m, f.tokens, 20, &exit);
  const std::vector<int32_t> other(f.tokens.begin() + 5, f.tokens.end());
  const PassRun alone_plain = run(m, other, 20, nullptr);

  const int32_t blocks = static_cast<int32_t>(f.tokens.size() / kBlock + 1);
  KvCache kv(m.kv_config(2 * blocks, kBlock, DType::kF32, DType::kF32));
  std::vector<int32_t> ta, tb;
  for (int32_t b = 0; b < blocks; ++b) ta.push_back(2 * b), tb.push_back(2 * b + 1);
  ForwardState s;
  ThreadPool pool(2);
  ForwardOutput out;
  size_t at_a = 0, at_b = 0;
  while (at_a < f.tokens.size() || at_b < other.size()) {
    std::vector<SequenceChunk> chunks;
    const size_t na = std::min(at_a == 0 ? size_t{20} : size_t{1}, f.tokens.size() - at_a);
    const size_t nb = std::min(at_b == 0 ? size_t{20} : size_t{1}, other.size() - at_b);
    if (na > 0) chunks.push_back({std::span(f.tokens).subspan(at_a, na), static_cast<int64_t>(at_a), ta, LogitsWanted::kAll, 0});
    if (nb > 0) chunks.push_back({std::span(other).subspan(at_b, nb), static_cast<int64_t>(at_b), tb, LogitsWanted::kAll});
    ASSERT_TRUE(m.forward(chunks, kv, s, pool, exit, out).ok());
    size_t c = 0;
    if (na > 0) {
      for (size_t i = 0; i < na; ++i, ++at_a) {
        ASSERT_EQ(std::memcmp(out.row(out.first_row[c] + static_cast<int64_t>(i)), alone_exit.rows[at_a].data(),
                              alone_exit.rows[at_a].size() * sizeof(float)), 0) << "exiting sequence, position " << at_a;
      }
      ++c;
    }
    for (size_t i = 0; i < nb; ++i, ++at_b) {
      ASSERT_EQ(std::memcmp(out.row(out.first_row[c] + static_cast<int64_t>(i)), alone_plain.rows[at_b].data(),
                            alone_plain.rows[at_b].size() * sizeof(float)), 0) << "full-depth sequence, position " << at_b;
      EXPECT_EQ(out.exit_layer[static_cast<size_t>(out.first_row[c]) + i], m.config().n_layer);
    }
  }
}

TEST(EarlyExitTest, RefusesSettingsTheModelCannotHave) {
  NEEDS_STORIES();
  const Fixture& f = fixture();
  const Model& m = *f.model;  // 5 layers: exit points 1..4
  KvCache kv(m.kv_config(2, kBlock, DType::kF32, DType::kF32));
  const std::vector<int32_t> table = {0, 1};
  ForwardState s;
  ThreadPool pool(1);
  ForwardOutput out;
  SequenceChunk c{std::span(f.tokens).first(4), 0, table, LogitsWanted::kLast, 0};
  auto refused = [&](std::vector<int> layers, double threshold, const std::string& names) {
    EarlyExitConfig e;
    e.layers = std::move(layers);
    e.threshold = threshold;
    const Status st = m.forward({&c, 1}, kv, s, pool, e, out);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << names;
    EXPECT_NE(st.message().find(names), std::string::npos) << st.message();
  };
  refused({0}, 0.5, "--exit-layers");
  refused({5}, 0.5, "--exit-layers");
  refused({3, 2}, 0.5, "--exit-layers");
  refused({2, 2}, 0.5, "--exit-layers");
  refused({2}, 0.0, "--exit-threshold");
  refused({2}, 1.5, "--exit-threshold");
  refused({2}, std::nan(""), "--exit-threshold");
  refused({2}, -0.1, "--exit-threshold");

  EXPECT_EQ(parse_exit_layers("2,4").value(), (std::vector<int>{2, 4}));
  for (const char* bad : {"", "2,", ",2", "2,x", "2.5", "0", "4,2"}) {
    EXPECT_FALSE(parse_exit_layers(bad).ok()) << bad;
  }
  EXPECT_EQ(parse_exit_thresholds("1.0,0.9").value(), (std::vector<double>{1.0, 0.9}));
  for (const char* bad : {"", "0.9,", "1.1", "0", "x", "nan"}) EXPECT_FALSE(parse_exit_thresholds(bad).ok()) << bad;
}

}  // namespace
}  // namespace llms
