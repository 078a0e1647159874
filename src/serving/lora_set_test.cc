// The adapter list's rules (NAME=PATH, unique names, not the base's name) and a
// LoraSet's lifetime rule: an adapter removed while a request holds it stays usable.
#include "serving/lora_set.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "io/gguf_file.h"
#include "model/model.h"
#include "tools/synthetic.h"
#include "tools/synthetic_lora.h"

namespace llms {
namespace {

TEST(LoraSpecsTest, ParsesOnePerLine) {
  auto specs = parse_lora_specs("a=/x/a.gguf\n\nb=/y/b_dir=2\n", "base");
  ASSERT_TRUE(specs.ok()) << specs.status().to_string();
  ASSERT_EQ(specs->size(), 2u);
  EXPECT_EQ((*specs)[0].name, "a");
  EXPECT_EQ((*specs)[1].path, "/y/b_dir=2");  // the first '=' splits
  EXPECT_TRUE(parse_lora_specs("", "base").value().empty());
}

TEST(LoraSpecsTest, RefusesWhatCannotBeServed) {
  auto message = [](std::string_view s) { return parse_lora_specs(s, "base").status().message(); };
  EXPECT_NE(message("a/x.gguf").find("'a/x.gguf' is not NAME=PATH"), std::string::npos);
  EXPECT_NE(message("=/x.gguf").find("needs a name"), std::string::npos);
  EXPECT_NE(message("a=").find("the path is empty"), std::string::npos);
  EXPECT_NE(message("a=/x\na=/y").find("'a' is given twice"), std::string::npos);
  EXPECT_NE(message("base=/x").find("the base model's name"), std::string::npos);
  EXPECT_NE(message("a,b=/x").find("use at most 128 letters"), std::string::npos);  // a comma breaks vLLM's lists
  EXPECT_NE(message("a\"b=/x").find("use at most 128 letters"), std::string::npos);
  EXPECT_TRUE(parse_lora_specs("org/sql-v1.2@main=/x", "base").ok());
}

TEST(LoraCatalogTest, NamesAreUnique) {
  LoraCatalog c(std::vector<LoraSpec>{{"a", "/a"}});
  EXPECT_EQ(c.add({"a", "/other"}).code(), StatusCode::kAlreadyExists);
  EXPECT_TRUE(c.add({"b", "/b"}).ok());
  EXPECT_EQ(c.find("b")->path, "/b");
  EXPECT_TRUE(c.remove("a").ok());
  EXPECT_EQ(c.remove("a").code(), StatusCode::kNotFound);
  EXPECT_FALSE(c.find("a").has_value());
  EXPECT_EQ(c.list().size(), 1u);
}

TEST(LoraSetTest, LoadsRemovesAndKeepsAdaptersInUse) {
  const std::string dir = ::testing::TempDir() + "/lora_set_test_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(write_synthetic_model(synthetic_preset("tiny").value(), dir + "/base.gguf").ok());
  auto model = Model::load(dir + "/base.gguf").value();
  SyntheticLoraSpec spec;
  spec.rank = 4;
  ASSERT_TRUE(write_lora_gguf(make_synthetic_lora(model->file(), spec).value(), DType::kF32, dir + "/a.gguf").ok());
  LoraSet set(*model);
  ASSERT_TRUE(set.add({"a", dir + "/a.gguf"}).ok());
  EXPECT_EQ(set.add({"a", dir + "/a.gguf"}).code(), StatusCode::kAlreadyExists);
  const Status bad = set.add({"b", dir + "/none.gguf"});
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("adapter 'b'"), std::string::npos) << bad.message();
  EXPECT_EQ(set.find("b"), nullptr);
  std::shared_ptr<const LoraAdapter> held = set.find("a");
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(held->base_identity(), model->identity());
  ASSERT_EQ(set.list().size(), 1u);
  EXPECT_EQ(set.list()[0].max_rank, 4);
  EXPECT_TRUE(set.remove("a").ok());
  EXPECT_EQ(set.find("a"), nullptr);
  EXPECT_EQ(set.remove("a").code(), StatusCode::kNotFound);
  EXPECT_NE(held->factors(0, LoraTarget::kQ), nullptr);  // still alive for whoever holds it
  std::filesystem::remove_all(dir);
}

// Under a budget of two adapters and a half: the least recently used adapter that no
// one holds is dropped to make room, an adapter held by a request never is, and a
// dropped one is loaded again by acquire().
TEST(LoraSetTest, BudgetDropsTheLeastRecentlyUsedUnheldAdapter) {
  const std::string dir = ::testing::TempDir() + "/lora_set_budget_test_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(write_synthetic_model(synthetic_preset("tiny").value(), dir + "/base.gguf").ok());
  auto model = Model::load(dir + "/base.gguf").value();
  std::vector<LoraSpec> specs;
  for (int i = 0; i < 3; ++i) {
    SyntheticLoraSpec spec;
    spec.rank = 4, spec.seed = 10 + static_cast<uint64_t>(i);
    const std::string path = dir + "/" + std::to_string(i) + ".gguf";
    ASSERT_TRUE(write_lora_gguf(make_synthetic_lora(model->file(), spec).value(), DType::kF32, path).ok());
    specs.push_back({"a" + std::to_string(i), path});
  }
  const int64_t bytes = LoraAdapter::load(specs[0].path, *model).value()->bytes();
  LoraSet set(*model);
  set.set_budget(2 * bytes + bytes / 2);
  for (const LoraSpec& s : specs) ASSERT_TRUE(set.add(s).ok());
  // a0 (least recently used) made room for a2.
  EXPECT_EQ(set.find("a0"), nullptr);
  EXPECT_NE(set.find("a1"), nullptr);
  LoraMemoryStats m = set.memory();
  EXPECT_EQ(m.resident_bytes, 2 * bytes);
  EXPECT_EQ(m.loads, 3);
  EXPECT_EQ(m.evictions, 1);
  ASSERT_EQ(set.list().size(), 3u);
  EXPECT_FALSE(set.list()[0].resident);  // still registered
  // a1 is held (a request runs with it): loading a0 drops a2, though a1 is older.
  Result<LoraAcquired> held = set.acquire("a1");
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(held->load_ns, 0);
  set.acquire("a2").value();  // a2 now more recent than a1, and not held
  Result<LoraAcquired> a0 = set.acquire("a0");
  ASSERT_TRUE(a0.ok()) << a0.status().to_string();
  EXPECT_GT(a0->load_ns, 0);
  EXPECT_EQ(set.find("a2"), nullptr);
  EXPECT_NE(set.find("a1"), nullptr);
  EXPECT_EQ(a0->adapter->name(), "a0");
  // a1 and a0 both held: no room for a2, and nothing is dropped.
  Result<LoraAcquired> refused = set.acquire("a2");
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("running requests use"), std::string::npos);
  EXPECT_NE(set.find("a1"), nullptr);
  EXPECT_NE(set.find("a0"), nullptr);
  m = set.memory();
  EXPECT_EQ(m.resident_bytes, 2 * bytes);
  EXPECT_EQ(m.loads, 4);  // a0 once more; a2, refused, was not read
  EXPECT_EQ(m.evictions, 2);
  // Once a1's request ends, a2 fits again (a1 dropped: a0 is still held).
  held = not_found("released");
  Result<LoraAcquired> a2 = set.acquire("a2");
  ASSERT_TRUE(a2.ok()) << a2.status().to_string();
  EXPECT_EQ(set.find("a1"), nullptr);
  EXPECT_EQ(set.acquire("none").status().code(), StatusCode::kNotFound);
  // Removing a resident adapter frees its share of the budget.
  EXPECT_TRUE(set.remove("a0").ok());
  EXPECT_EQ(set.memory().resident_bytes, bytes);
  // An adapter bigger than the whole budget is refused when it is registered.
  LoraSet small(*model);
  small.set_budget(bytes - 1);
  const Status big = small.add(specs[0]);
  EXPECT_EQ(big.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(big.message().find("more than the whole LoRA memory budget"), std::string::npos) << big.message();
  EXPECT_EQ(small.size(), 0u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace llms
