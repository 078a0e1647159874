#include "server/model_list.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace llms {
namespace {

namespace fs = std::filesystem;

// A folder of empty stand-ins: list_models() reads names and paths, never the files.
class ModelListTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/model_list_test_" + std::to_string(getpid());
    fs::create_directories(dir_ + "/models/hf-model");
    fs::create_directories(dir_ + "/models/not-a-model");
    std::ofstream(dir_ + "/models/hf-model/config.json") << "{}";
    std::ofstream(dir_ + "/models/b.gguf") << "";
    std::ofstream(dir_ + "/models/a.gguf") << "";
    std::ofstream(dir_ + "/models/notes.txt") << "";
    std::ofstream(dir_ + "/odd=name.gguf") << "";
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string dir_;
};

std::vector<std::string> names(const std::vector<ModelEntry>& models) {
  std::vector<std::string> out;
  for (const ModelEntry& m : models) out.push_back(m.name);
  return out;
}

TEST_F(ModelListTest, OnePathIsOneModelNamedAsBefore) {
  ServerConfig c;
  c.model_path = "/models/llama-3.gguf";
  const auto models = list_models(c).value();
  ASSERT_EQ(models.size(), 1u);
  EXPECT_EQ(models[0].name, "llama-3");
  EXPECT_EQ(models[0].path, "/models/llama-3.gguf");
  EXPECT_FALSE(serves_several_models(c));
  c.model_name = "chat";
  EXPECT_EQ(list_models(c).value()[0].name, "chat");
  EXPECT_EQ(served_model_name(c), "chat");
}

TEST_F(ModelListTest, AnExistingPathWithAnEqualsSignIsAPath) {
  ServerConfig c;
  c.model_path = dir_ + "/odd=name.gguf";
  const auto models = list_models(c).value();
  ASSERT_EQ(models.size(), 1u);
  EXPECT_EQ(models[0].name, "odd=name");  // as before: the file name, which is not a valid id
  c.model_name = "odd";
  EXPECT_EQ(list_models(c).value()[0].path, dir_ + "/odd=name.gguf");
}

TEST_F(ModelListTest, NamedModelsThenTheFolderByName) {
  ServerConfig c;
  c.model_path = "first=/m/x.gguf\n/m/second.gguf\n";
  c.models_dir = dir_ + "/models";
  c.alias = "first=gpt-4o\nhf-model=small";
  const auto models = list_models(c).value();
  EXPECT_EQ(names(models), (std::vector<std::string>{"first", "second", "a", "b", "hf-model"}));
  EXPECT_EQ(models[0].aliases, std::vector<std::string>{"gpt-4o"});
  EXPECT_EQ(models[4].aliases, std::vector<std::string>{"small"});
  EXPECT_EQ(models[4].path, dir_ + "/models/hf-model");
  EXPECT_TRUE(serves_several_models(c));
  EXPECT_EQ(served_model_name(c), "first");
}

TEST_F(ModelListTest, BadListsSayWhy) {
  auto error = [](const std::string& model, const std::string& dir, const std::string& alias) {
    ServerConfig c;
    c.model_path = model;
    c.models_dir = dir;
    c.alias = alias;
    const auto r = list_models(c);
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_NE(error("a=/x.gguf\na=/y.gguf", "", "").find("given twice"), std::string::npos);
  EXPECT_NE(error("a=", "", "").find("path is empty"), std::string::npos);
  EXPECT_NE(error("bad name=/x.gguf", "", "").find("model name 'bad name'"), std::string::npos);
  EXPECT_NE(error("a=/x.gguf", "", "b=c").find("no model 'b'"), std::string::npos);
  EXPECT_NE(error("a=/x.gguf", "", "a").find("not NAME=ALIAS"), std::string::npos);
  EXPECT_NE(error("a=/x.gguf\nb=/y.gguf", "", "a=b").find("already names"), std::string::npos);
  EXPECT_NE(error("a=/x.gguf", "", "a=c\na=c").find("already names"), std::string::npos);
  EXPECT_NE(error("", dir_ + "/models/not-a-model", "").find("holds no GGUF file"), std::string::npos);
  EXPECT_NE(error("", dir_ + "/missing", "").find("cannot read"), std::string::npos);
  EXPECT_NE(error(" \n", "", "").find("no model given"), std::string::npos);
  ServerConfig named;
  named.model_path = "a=/x.gguf";
  named.model_name = "b";
  EXPECT_NE(list_models(named).status().message().find("model_name"), std::string::npos);
}

}  // namespace
}  // namespace llms
