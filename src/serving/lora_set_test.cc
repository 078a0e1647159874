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

}  // namespace
}  // namespace llms
