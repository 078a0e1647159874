// Importance files: ours, llama.cpp's GGUF and its legacy .dat, built here byte by
// byte from their documented layouts (no llama-imatrix on the build machines), and
// checked against means worked out by hand.
#include "tools/importance_file.h"

#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

#include "io/gguf_writer.h"
#include "tools/quantizer.h"
#include "tools/synthetic.h"

namespace llms {
namespace {

std::string temp(const std::string& name) {
  return ::testing::TempDir() + "/" + std::to_string(getpid()) + "_" + name;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void expect_floats(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_FLOAT_EQ(got[i], want[i]) << "channel " << i;
}

// llama.cpp's legacy layout, appended field by field (little-endian host).
struct DatBytes {
  std::string b;
  DatBytes& i32(int32_t v) { return raw(&v, 4); }
  DatBytes& name(const std::string& s) { i32(static_cast<int32_t>(s.size())); b += s; return *this; }
  DatBytes& floats(const std::vector<float>& v) { return raw(v.data(), v.size() * 4); }
  DatBytes& entry(const std::string& n, int32_t ncall, const std::vector<float>& v) {
    return name(n).i32(ncall).i32(static_cast<int32_t>(v.size())).floats(v);
  }
  DatBytes& raw(const void* p, size_t n) { b.append(static_cast<const char*>(p), n); return *this; }
};

// 2,000 tokens in chunks of 512: llama.cpp's ncall = ceil(2000 / 512) = 4, and it
// stores each channel's sum / 2000 * 4.
constexpr int32_t kNcall = 4;
const std::vector<double> kSums = {8000, 4000, 2000, 0};  // means 4, 2, 1, 0
const std::vector<float> kStored = {16, 8, 4, 0};         // means * ncall
// Means 4, 2, 1, and the floor 1e-3 * mean(4, 2, 1, 0) for the silent channel.
const std::vector<float> kImportance = {4, 2, 1, 1.75e-3f};

std::string two_entry_dat(size_t* end_of_entries) {
  DatBytes d;
  d.i32(2).entry("blk.0.attn_q.weight", kNcall, kStored);
  d.entry("blk.0.ffn_gate_exps.weight", kNcall, {8, 4, 2, 6, 4, 4});  // 3 experts of 2 channels
  *end_of_entries = d.b.size();
  d.i32(7).name("wiki.train.raw");  // chunks, dataset
  return d.b;
}

TEST(ImportanceFileTest, LlamaCppDatGivesTheMeansOurGgufGivesForTheSameSums) {
  size_t end = 0;
  const std::string dat = temp("imatrix.dat"), ours = temp("ours.gguf");
  write_file(dat, two_entry_dat(&end));
  auto t = read_importance(dat);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->chunks, 7);
  EXPECT_EQ(t->datasets, std::vector<std::string>{"wiki.train.raw"});
  EXPECT_EQ(t->source, dat);

  ImportanceTable own;
  own.tensors["blk.0.attn_q.weight"] = ChannelSums{kSums, 2000, {}};
  ASSERT_TRUE(write_importance(own, ours).ok());
  auto back = read_importance(ours);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  const std::vector<float> from_dat = t->importance("blk.0.attn_q.weight");
  const std::vector<float> from_gguf = back->importance("blk.0.attn_q.weight");
  ASSERT_EQ(from_dat.size(), 4u);
  ASSERT_EQ(from_gguf.size(), 4u);
  for (size_t c = 0; c < 4; ++c) {
    EXPECT_FLOAT_EQ(from_dat[c], kImportance[c]) << c;
    EXPECT_FLOAT_EQ(from_gguf[c], kImportance[c]) << c;
  }
  // Experts: one count for all (the .dat keeps none per expert): values / 4.
  expect_floats(t->importance("blk.0.ffn_gate_exps.weight"), {2, 1, 0.5f, 1.5f, 1, 1});
  std::filesystem::remove(dat);
  std::filesystem::remove(ours);
}

TEST(ImportanceFileTest, OldestDatEndsWithTheEntriesAndNcallZeroMeansValuesAsStored) {
  const std::string dat = temp("old.dat");
  write_file(dat, DatBytes().i32(1).entry("output.weight", 0, {3, 5}).b);
  auto t = read_importance(dat);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->chunks, 0);
  EXPECT_TRUE(t->datasets.empty());
  expect_floats(t->importance("output.weight"), {3, 5});
  std::filesystem::remove(dat);
}

TEST(ImportanceFileTest, ReadsLlamaCppGgufWithPerExpertCounts) {
  // As llama-imatrix writes it: 2-D in_sum2 [cols, n_mat] and counts [1, n_mat] even
  // for one matrix, in_sum beside them, and imatrix.chunk_size.
  GgufWriter w(32);
  w.set("general.type", gguf::Value::string("imatrix"));
  w.set("imatrix.datasets", gguf::Value::string_array({"wiki.train.raw"}));
  w.set("imatrix.chunk_count", gguf::Value::u32(7));
  w.set("imatrix.chunk_size", gguf::Value::u32(512));
  const auto f32 = [&](const std::string& name, std::vector<int64_t> ne, std::vector<float> v) {
    w.add_tensor(name, DType::kF32, std::move(ne), [v](std::span<uint8_t> out) { std::memcpy(out.data(), v.data(), v.size() * 4); });
  };
  f32("blk.0.attn_q.weight.in_sum2", {4, 1}, {16, 8, 4, 0});  // 4 tokens: means 4, 2, 1, 0
  f32("blk.0.attn_q.weight.counts", {1, 1}, {4});
  f32("blk.0.attn_q.weight.in_sum", {4, 1}, {-1, 1, -1, 1});
  // 3 experts: 3 tokens, 1 token, never routed to.
  f32("blk.0.ffn_gate_exps.weight.in_sum2", {2, 3}, {6, 3, 0.5f, 1.5f, 9, 9});
  f32("blk.0.ffn_gate_exps.weight.counts", {1, 3}, {3, 1, 0});
  const std::string path = temp("llama.imatrix.gguf");
  ASSERT_TRUE(w.write(path).ok());

  auto t = read_importance(path);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->tensors.size(), 2u);  // in_sum is not an entry
  EXPECT_EQ(t->chunks, 7);
  EXPECT_EQ(t->datasets, std::vector<std::string>{"wiki.train.raw"});
  expect_floats(t->importance("blk.0.attn_q.weight"), kImportance);
  // Experts 0 and 1 by their own counts; expert 2 at the mean of the rest, 1.25.
  expect_floats(t->importance("blk.0.ffn_gate_exps.weight"), {2, 1, 0.5f, 1.5f, 1.25f, 1.25f});
  EXPECT_EQ(t->tensors.at("blk.0.ffn_gate_exps.weight").matrix_counts, (std::vector<int64_t>{3, 1, 0}));

  // Our writer keeps the per-expert counts.
  const std::string again = temp("again.gguf");
  ASSERT_TRUE(write_importance(*t, again).ok());
  auto back = read_importance(again);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->importance("blk.0.ffn_gate_exps.weight"), t->importance("blk.0.ffn_gate_exps.weight"));
  std::filesystem::remove(path);
  std::filesystem::remove(again);
}

void expect_invalid(const Result<ImportanceTable>& r, const std::string& path, const std::string& needle) {
  ASSERT_FALSE(r.ok()) << needle;
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().to_string();
  EXPECT_NE(r.status().message().find(path), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
}

TEST(ImportanceFileTest, EveryTruncationOfADatIsAClearError) {
  size_t end = 0;
  const std::string full = two_entry_dat(&end), path = temp("cut.dat");
  for (size_t n = 0; n < full.size(); ++n) {
    write_file(path, full.substr(0, n));
    auto r = read_importance(path);
    if (n == end || n == end + 4) {  // no trailer, or the chunk count alone: older files
      EXPECT_TRUE(r.ok()) << n << ": " << r.status().to_string();
      continue;
    }
    expect_invalid(r, path, "");
  }
  // Cut inside the second entry's values: the entry is named.
  write_file(path, full.substr(0, end - 6));
  expect_invalid(read_importance(path), path, "entry 2 'blk.0.ffn_gate_exps.weight': truncated");
  std::filesystem::remove(path);
}

TEST(ImportanceFileTest, MalformedDatEntriesAreClearErrors) {
  const std::string path = temp("bad.dat");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const struct {
    std::string bytes, needle;
  } cases[] = {
      {DatBytes().i32(1).name("a").i32(1).i32(-3).floats({1, 2, 3, 4}).b, "entry 1 'a': nval -3"},
      {DatBytes().i32(1).name("a").i32(-1).i32(1).floats({1, 2, 3, 4}).b, "entry 1 'a': ncall -1"},
      {DatBytes().i32(1).entry("a", 1, {1, nan}).b, "entry 1 'a': value 1 is nan"},
      {DatBytes().i32(1).entry("a", 1, {1, -2}).b, "value 1 is -2"},
      {DatBytes().i32(2).entry("a", 1, {1}).entry("a", 1, {1}).b, "entry 2 'a': the name appears twice"},
      {DatBytes().i32(1).i32(1 << 30).entry("a", 1, {1}).b, "name length 1073741824"},
      {DatBytes().i32(1).entry("a", 1, {1}).i32(3).name("calib").i32(0).b, "stray bytes after the dataset name"},
      {DatBytes().i32(-5).entry("a", 1, {1}).b, "not an importance file"},
      {"GGU", "too short"},
  };
  for (const auto& c : cases) {
    write_file(path, c.bytes);
    expect_invalid(read_importance(path), path, c.needle);
  }
  std::filesystem::remove(path);
}

TEST(ImportanceFileTest, TruncatedGgufIsAClearError) {
  ImportanceTable own;
  own.tensors["blk.0.attn_q.weight"] = ChannelSums{kSums, 2000, {}};
  const std::string path = temp("cut.gguf");
  ASSERT_TRUE(write_importance(own, path).ok());
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  for (const size_t keep : {bytes.size() / 2, bytes.size() - 30}) {  // in the metadata; in the tensor data
    write_file(path, bytes.substr(0, keep));
    expect_invalid(read_importance(path), path, "not a readable GGUF importance file");
  }
  // Sums without counts.
  GgufWriter w(32);
  w.add_tensor("x.in_sum2", DType::kF32, {2}, [](std::span<uint8_t> out) { std::memset(out.data(), 0, out.size()); });
  ASSERT_TRUE(w.write(path).ok());
  expect_invalid(read_importance(path), path, "importance entry 'x': needs an F32 .counts");
  std::filesystem::remove(path);
}

TEST(ImportanceFileTest, EntriesMustFitTheModelBeingQuantized) {
  SyntheticSpec spec = synthetic_preset("tiny").value();
  spec.n_expert = 4, spec.n_expert_used = 2;
  const std::string model = temp("moe.gguf"), out = temp("moe_q8.gguf"), dat = temp("moe.dat");
  ASSERT_TRUE(write_synthetic_model(spec, model).ok());
  const int64_t d = spec.n_embd, ff = spec.expert_ffn();
  const auto ones = [](int64_t n) { return std::vector<float>(static_cast<size_t>(n), 1.0f); };
  QuantizeOptions o;
  o.type = DType::kQ8_0;

  // Fits: a dense matrix, and an expert tensor with one slice of cols per expert.
  write_file(dat, DatBytes().i32(2).entry("blk.0.attn_q.weight", 4, ones(d)).entry("blk.0.ffn_down_exps.weight", 4, ones(ff * 4)).b);
  auto table = read_importance(dat);
  ASSERT_TRUE(table.ok()) << table.status().to_string();
  o.importance = &*table;
  auto rep = quantize_model(model, out, o);
  ASSERT_TRUE(rep.ok()) << rep.status().to_string();
  int weighted = 0;  // -1 when a tensor was quantized without its importance
  for (const auto& t : rep->tensors) {
    if (t.name == "blk.0.ffn_down_exps.weight" || t.name == "blk.0.attn_q.weight") {
      EXPECT_GE(t.weighted_error, 0) << t.name;
      ++weighted;
    }
  }
  EXPECT_EQ(weighted, 2);

  const struct {
    std::string bytes, needle;
  } misfits[] = {
      {DatBytes().i32(1).entry("blk.0.attn_q.weight", 4, ones(d + 1)).b, "entry 'blk.0.attn_q.weight' has 65 values"},
      {DatBytes().i32(1).entry("blk.0.ffn_down_exps.weight", 4, ones(ff * 3)).b, fmt::format("has {} values, but the tensor", ff * 3)},
      {DatBytes().i32(1).entry("blk.9.attn_q.weight", 4, ones(d)).b, "entry 'blk.9.attn_q.weight' names no tensor"},
      {DatBytes().i32(1).entry("blk.0.attn_norm.weight", 4, ones(d)).b, "is a vector"},
  };
  for (const auto& m : misfits) {
    write_file(dat, m.bytes);
    table = read_importance(dat);
    ASSERT_TRUE(table.ok()) << table.status().to_string();
    o.importance = &*table;
    const auto r = quantize_model(model, out, o);
    ASSERT_FALSE(r.ok()) << m.needle;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(dat), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(m.needle), std::string::npos) << r.status().message();
  }
  std::filesystem::remove(model);
  std::filesystem::remove(out);
  std::filesystem::remove(dat);
}

TEST(ImportanceFileTest, SlicesOfFusedTensorsFitAndWeighTheFusedTensor) {
  // `llmserve imatrix` names Phi-3's products attn_q/k/v and ffn_gate/ffn_up; the file
  // holds attn_qkv and a gate-and-up ffn_up.
  SyntheticSpec spec = synthetic_preset("tiny").value();
  spec.arch = "phi3";
  spec.n_head_kv = spec.n_head;
  const std::string model = temp("phi3.gguf"), out = temp("phi3_q8.gguf");
  ASSERT_TRUE(write_synthetic_model(spec, model).ok());
  ImportanceTable table;
  for (const char* what : {"attn_q", "attn_k", "attn_v", "ffn_gate", "ffn_up"}) {
    table.tensors[fmt::format("blk.0.{}.weight", what)] = ChannelSums{std::vector<double>(static_cast<size_t>(spec.n_embd), 2.0), 2, {}};
  }
  QuantizeOptions o;
  o.type = DType::kQ8_0;
  o.importance = &table;
  auto rep = quantize_model(model, out, o);
  ASSERT_TRUE(rep.ok()) << rep.status().to_string();
  int weighted = 0;
  for (const auto& t : rep->tensors) {
    if (t.name == "blk.0.attn_qkv.weight" || t.name == "blk.0.ffn_up.weight") {
      EXPECT_GE(t.weighted_error, 0) << t.name;
      ++weighted;
    }
  }
  EXPECT_EQ(weighted, 2);
  std::filesystem::remove(model);
  std::filesystem::remove(out);
}

}  // namespace
}  // namespace llms
