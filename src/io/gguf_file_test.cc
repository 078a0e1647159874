#include "io/gguf_file.h"

#include <gtest/gtest.h>

#include <cstring>

#include "io/gguf_writer.h"

namespace llms {
namespace {

using gguf::Value;
using gguf::ValueType;

std::vector<uint8_t> bytes_of(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

TEST(GgufRoundTripTest, EveryValueTypeAndTensorsSurviveWriteAndRead) {
  GgufWriter w;
  w.set("general.architecture", Value::string("llama"));
  w.set("t.u8", Value::u8(200));
  w.set("t.i8", Value::i8(-100));
  w.set("t.u16", Value::u16(60000));
  w.set("t.i16", Value::i16(-30000));
  w.set("t.u32", Value::u32(4000000000u));
  w.set("t.i32", Value::i32(-2000000000));
  w.set("t.u64", Value::u64(1ull << 60));
  w.set("t.i64", Value::i64(-(1ll << 60)));
  w.set("t.f32", Value::f32(1.5f));
  w.set("t.f64", Value::f64(-2.25));
  w.set("t.bool", Value::boolean(true));
  w.set("t.strs", Value::string_array({"a", "", "héllo"}));
  w.set("t.nested", Value::array(ValueType::kArray, {Value::i32_array({1, 2}), Value::i32_array({3})}));
  const std::vector<float> a = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<float> b = {9, 10, 11, 12};
  const auto ab = bytes_of(a), bb = bytes_of(b);
  w.add_tensor("a", DType::kF32, {4, 2}, ab);
  w.add_tensor("b", DType::kF32, {4}, bb);
  const auto file = w.write_to_memory();

  auto r = GgufFile::parse(file);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const GgufFile& f = *r;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.get_string("general.architecture").value(), "llama");
  EXPECT_EQ(f.get_uint("t.u8").value(), 200u);
  EXPECT_EQ(f.get_int("t.i8").value(), -100);
  EXPECT_EQ(f.get_uint("t.u16").value(), 60000u);
  EXPECT_EQ(f.get_int("t.i16").value(), -30000);
  EXPECT_EQ(f.get_uint("t.u32").value(), 4000000000u);
  EXPECT_EQ(f.get_int("t.i32").value(), -2000000000);
  EXPECT_EQ(f.get_uint("t.u64").value(), 1ull << 60);
  EXPECT_EQ(f.get_int("t.i64").value(), -(1ll << 60));
  EXPECT_EQ(f.get_float("t.f32").value(), 1.5);
  EXPECT_EQ(f.get_float("t.f64").value(), -2.25);
  EXPECT_TRUE(f.get_bool("t.bool").value());
  EXPECT_EQ(f.get_string_array("t.strs").value(), (std::vector<std::string>{"a", "", "héllo"}));
  const auto& nested = f.find("t.nested")->as_array();
  ASSERT_EQ(nested.items.size(), 2u);
  EXPECT_EQ(nested.items[0].as_array().items[1].as_i64(), 2);
  // Type errors name the key.
  EXPECT_NE(f.get_string("t.u8").status().message().find("t.u8"), std::string::npos);
  EXPECT_EQ(f.get_uint("t.i8").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(f.get_uint("missing").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(f.get_uint_or("missing", 7).value(), 7u);

  ASSERT_EQ(f.tensors().size(), 2u);
  const auto* ta = f.find_tensor("a");
  ASSERT_NE(ta, nullptr);
  EXPECT_EQ(ta->ne[0], 4);
  EXPECT_EQ(ta->ne[1], 2);
  EXPECT_EQ(ta->data - file.data(), static_cast<ptrdiff_t>(f.data_offset()));
  EXPECT_EQ(std::memcmp(ta->data, a.data(), 32), 0);
  const auto* tb = f.find_tensor("b");
  EXPECT_EQ(tb->offset % 32, 0u);
  EXPECT_EQ(std::memcmp(tb->data, b.data(), 16), 0);
}

TEST(GgufRoundTripTest, CustomAlignmentIsRecordedAndHonoured) {
  GgufWriter w(64);
  std::vector<float> a(3, 1.0f), b(5, 2.0f);
  auto ab = bytes_of(a), bb = bytes_of(b);
  w.add_tensor("a", DType::kF32, {3}, ab);
  w.add_tensor("b", DType::kF32, {5}, bb);
  const auto file = w.write_to_memory();
  auto f = GgufFile::parse(file);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(f->data_offset() % 64, 0u);
  EXPECT_EQ(f->find_tensor("b")->offset, 64u);
}

TEST(GgufFileTest, ReadsTheSharedStoriesModel) {
  const std::string path = std::string(LLMSERVE_SHARED_DIR) + "/models/stories260K.gguf";
  auto f = GgufFile::open(path);
  if (!f.ok() && f.status().code() == StatusCode::kNotFound) GTEST_SKIP() << "needs " << path;
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->get_string("general.architecture").value(), "llama");
  EXPECT_EQ(f->get_uint("llama.embedding_length").value(), 64u);
  EXPECT_EQ(f->tensors().size(), 48u);
  EXPECT_EQ(f->get_string_array("tokenizer.ggml.tokens")->size(), 512u);
  const auto* emb = f->find_tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->ne[0], 64);
  EXPECT_EQ(emb->ne[1], 512);
}

TEST(GgufFileTest, MissingFileIsNotFound) {
  auto f = GgufFile::open("/nonexistent/model.gguf");
  EXPECT_EQ(f.status().code(), StatusCode::kNotFound);
  EXPECT_NE(f.status().message().find("/nonexistent/model.gguf"), std::string::npos);
}

}  // namespace
}  // namespace llms
