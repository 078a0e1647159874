#include "eval/quant_planner.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <limits>

#include "base/random.h"
#include "eval/imatrix.h"
#include "eval/perplexity.h"
#include "model/model.h"
#include "tools/synthetic.h"

namespace llms {
namespace {

std::string temp(const std::string& name) {
  return ::testing::TempDir() + "/" + std::to_string(getpid()) + "_" + name;
}

// One layer, 64-wide rows (Q4_0, Q8_0 and F16 fit; the k-quants do not).
std::string small_model() {
  SyntheticSpec spec;
  spec.n_vocab = 300, spec.n_embd = 64, spec.n_layer = 1, spec.n_head = 4, spec.n_head_kv = 2, spec.n_ff = 128;
  spec.seed = 3;
  const std::string path = temp("planner_model.gguf");
  EXPECT_TRUE(write_synthetic_model(spec, path).ok());
  return path;
}

std::vector<int32_t> random_tokens(int n, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& v : t) v = static_cast<int32_t>(3 + rng.uniform() * 290);
  return t;
}

TEST(ImatrixTest, SumsEverySquaredInputPerChannelAndRoundTrips) {
  const std::string path = small_model();
  auto model = Model::load(path);
  ASSERT_TRUE(model.ok());
  ThreadPool pool(2);
  const auto tokens = random_tokens(100, 5);  // three windows of 32, the rest unused
  auto table = collect_importance(**model, tokens, {32, 0}, pool);
  ASSERT_TRUE(table.ok()) << table.status().to_string();
  EXPECT_EQ(table->chunks, 3);
  // Every product of the layer and the head, each over all 96 tokens.
  for (const char* name : {"blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.0.attn_v.weight", "blk.0.attn_output.weight",
                           "blk.0.ffn_gate.weight", "blk.0.ffn_up.weight", "blk.0.ffn_down.weight", "output.weight"}) {
    ASSERT_TRUE(table->tensors.count(name)) << name;
    EXPECT_EQ(table->tensors.at(name).count, 96) << name;
  }
  EXPECT_FALSE(table->tensors.count("token_embd.weight"));  // a lookup, not a product
  // Products of the same input sum the same squares.
  EXPECT_EQ(table->tensors.at("blk.0.attn_q.weight").sum_sq, table->tensors.at("blk.0.attn_v.weight").sum_sq);
  EXPECT_EQ(table->tensors.at("blk.0.ffn_gate.weight").sum_sq, table->tensors.at("blk.0.ffn_up.weight").sum_sq);
  EXPECT_EQ(table->tensors.at("blk.0.ffn_down.weight").sum_sq.size(), 128u);
  const std::vector<float> imp = table->importance("blk.0.attn_q.weight");
  ASSERT_EQ(imp.size(), 64u);
  for (size_t c = 0; c < imp.size(); ++c) {
    EXPECT_FLOAT_EQ(imp[c], static_cast<float>(table->tensors.at("blk.0.attn_q.weight").sum_sq[c] / 96));
  }

  table->datasets = {"calib.txt"};
  const std::string file = temp("imatrix.gguf");
  ASSERT_TRUE(write_importance(*table, file).ok());
  auto back = read_importance(file);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->datasets, table->datasets);
  EXPECT_EQ(back->chunks, 3);
  for (const auto& [name, s] : table->tensors) {
    EXPECT_EQ(back->tensors.at(name).count, s.count);
    for (size_t c = 0; c < s.sum_sq.size(); ++c) EXPECT_FLOAT_EQ(back->tensors.at(name).sum_sq[c], s.sum_sq[c]);
  }
  // A model file is not an importance file; a short text is not a window.
  auto wrong = read_importance(path);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("no importance data"), std::string::npos);
  EXPECT_FALSE(collect_importance(**model, random_tokens(10, 1), {32, 0}, pool).ok());
  std::filesystem::remove(file);
  std::filesystem::remove(path);
}

// The least total cost within `budget` over all combinations of the options.
double brute_force(const std::vector<PlannedTensor>& ts, uint64_t budget) {
  double best = std::numeric_limits<double>::infinity();
  std::vector<size_t> at(ts.size(), 0);
  for (;;) {
    uint64_t bytes = 0;
    double cost = 0;
    for (size_t i = 0; i < ts.size(); ++i) bytes += ts[i].options[at[i]].bytes, cost += ts[i].options[at[i]].kl;
    if (bytes <= budget) best = std::min(best, cost);
    size_t i = 0;
    while (i < ts.size() && ++at[i] == ts[i].options.size()) at[i++] = 0;
    if (i == ts.size()) return best;
  }
}

// Calibration and held-out texts of 128 random tokens, windows of 64, three types.
PlanRequest small_request(uint64_t seed) {
  PlanRequest req;
  req.calib = random_tokens(128, seed);
  req.eval = random_tokens(128, seed + 1);
  req.ctx = 64;
  req.candidates = {DType::kQ4_0, DType::kQ8_0, DType::kF16};
  return req;
}

QuantizeOptions two_threads() {
  QuantizeOptions base;
  base.threads = 2;
  return base;
}

TEST(QuantPlannerTest, SizeTargetPlanIsTheCheapestThatFitsAndIsMeasured) {
  const std::string path = small_model(), out = temp("planned.gguf");
  PlanRequest req = small_request(11);
  const QuantizeOptions base = two_threads();
  // Half-way between the smallest plan (all Q4_0) and the source (F32).
  auto probe = plan_and_quantize(path, out, base, [&] { PlanRequest r = req; r.target_bytes = 1u << 30; return r; }());
  ASSERT_TRUE(probe.ok()) << probe.status().to_string();
  uint64_t least = 0, vectors = probe->bytes;
  for (const auto& t : probe->tensors) least += t.options.front().bytes, vectors -= t.bytes;
  req.target_bytes = vectors + least + (probe->bytes - vectors - least) / 4;
  auto r = plan_and_quantize(path, out, base, req);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_LE(r->bytes, req.target_bytes);
  EXPECT_EQ(r->sensitivity_runs, 27);  // 9 matrices x 3 candidate types
  for (const auto& t : r->tensors) {
    for (const auto& o : t.options) ASSERT_EQ(o.bytes % 16, 0u) << t.name;  // the planner's size unit: exact
  }
  EXPECT_NEAR(r->predicted_kl, brute_force(r->tensors, req.target_bytes - vectors), 1e-12);
  // The written file holds the plan and measures as reported.
  auto model = Model::load(out), source = Model::load(path);
  ASSERT_TRUE(model.ok() && source.ok());
  for (const auto& t : r->tensors) EXPECT_EQ((*model)->file().find_tensor(t.name)->dtype, t.type) << t.name;
  ThreadPool pool(2);
  auto m = evaluate_perplexity(req.eval, {model->get(), DType::kF32, DType::kF32}, {source->get(), DType::kF32, DType::kF32},
                               {req.ctx, 0}, pool);
  ASSERT_TRUE(m.ok());
  EXPECT_NEAR(m->kl_divergence, r->measured_kl, 1e-9);
  EXPECT_GT(r->measured_kl, 0.0);
  // A budget below the smallest plan is refused, naming what it needs.
  req.target_bytes = vectors + least / 2;
  auto small = plan_and_quantize(path, out, base, req);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.status().message().find("smallest plan needs"), std::string::npos);
  std::filesystem::remove(out);
  std::filesystem::remove(path);
}

TEST(QuantPlannerTest, FloorKeepsEveryMatrixAtItsTypeOrLarger) {
  const std::string path = small_model(), out = temp("planned_floor.gguf");
  PlanRequest req = small_request(31);
  req.floor = DType::kQ8_0;
  const QuantizeOptions base = two_threads();
  // Room for Q8_0 everywhere and a little more.
  auto all = plan_and_quantize(path, out, base, [&] { PlanRequest r = req; r.target_bytes = 1u << 30; return r; }());
  ASSERT_TRUE(all.ok()) << all.status().to_string();
  uint64_t least = 0, vectors = all->bytes;
  for (const auto& t : all->tensors) least += t.options.front().bytes, vectors -= t.bytes;
  req.target_bytes = vectors + least + 4096;
  auto r = plan_and_quantize(path, out, base, req);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->sensitivity_runs, 18);  // 9 matrices x (Q8_0, F16): Q4_0 is below the floor
  for (const auto& t : r->tensors) {
    EXPECT_EQ(t.options.front().type, DType::kQ8_0) << t.name;  // the smallest option is the floor
    for (const auto& o : t.options) EXPECT_NE(o.type, DType::kQ4_0) << t.name;
  }
  EXPECT_LE(r->bytes, req.target_bytes);
  EXPECT_NEAR(r->predicted_kl, brute_force(r->tensors, req.target_bytes - vectors), 1e-12);
  EXPECT_TRUE(std::any_of(r->tensors.begin(), r->tensors.end(), [](const auto& t) { return t.type != DType::kQ8_0; }));
  std::filesystem::remove(out);
  std::filesystem::remove(path);
}

TEST(QuantPlannerTest, KlBoundIsMetOnTheHeldOutTextOrReportedUnmet) {
  const std::string path = small_model(), out = temp("planned_kl.gguf");
  PlanRequest req = small_request(21);
  const QuantizeOptions base = two_threads();
  for (double bound : {1e-3, 1e-12}) {
    req.max_kl = bound;
    auto r = plan_and_quantize(path, out, base, req);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(r->met, r->measured_kl <= bound) << bound;
    EXPECT_GE(r->attempts, 1);
    EXPECT_LE(r->attempts, 4);
  }
  // A tight bound keeps the matrices that matter at the source's F32.
  req.max_kl = 1e-12;
  auto tight = plan_and_quantize(path, out, base, req);
  ASSERT_TRUE(tight.ok());
  EXPECT_EQ(tight->tensors.size(), 9u);
  EXPECT_TRUE(std::any_of(tight->tensors.begin(), tight->tensors.end(), [](const auto& t) { return t.type == DType::kF32; }));
  EXPECT_LE(tight->predicted_kl, 1e-12);
  // A loose bound is met by the smallest plan of all.
  req.max_kl = 1.0;
  auto loose = plan_and_quantize(path, out, base, req);
  ASSERT_TRUE(loose.ok());
  EXPECT_TRUE(loose->met);
  for (const auto& t : loose->tensors) EXPECT_EQ(t.type, DType::kQ4_0) << t.name;
  // Both a size and a bound, or neither, is an error.
  req.target_bytes = 1u << 20;
  EXPECT_FALSE(plan_and_quantize(path, out, base, req).ok());
  std::filesystem::remove(out);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace llms
