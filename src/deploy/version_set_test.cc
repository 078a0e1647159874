#include "deploy/version_set.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "tools/synthetic.h"

namespace llms {
namespace {

// A file written once per test process and removed at its exit.
struct TempModel {
  std::string path;
  ~TempModel() {
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
  }
};

const std::string& tiny_model() {
  static const TempModel model = [] {
    const std::string p = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_versions_tiny.gguf";
    EXPECT_TRUE(write_synthetic_model(synthetic_preset("tiny").value(), p).ok());
    return TempModel{p};
  }();
  return model.path;
}

VersionPtr load(const std::string& name) {
  static const EngineConfig engine = [] {
    EngineConfig e;
    e.threads = 1;
    e.kv.cache_bytes = 1 << 20;
    return e;
  }();
  VersionLoadOptions o;
  o.name = name;
  o.model_path = tiny_model();
  o.settings.engine = &engine;
  auto v = ServingVersion::load(o);
  EXPECT_TRUE(v.ok()) << v.status().to_string();
  return v.ok() ? *v : nullptr;
}

TEST(VersionSetTest, CanaryShareIsExactAndPinsWin) {
  VersionSet set(load("v1"));
  set.start_canary(load("v2"), 0.25);
  std::map<std::string, int> count;
  for (int i = 0; i < 400; ++i) count[(*set.pick(""))->name()]++;
  EXPECT_EQ(count["v2"], 100);
  EXPECT_EQ(count["v1"], 300);
  EXPECT_EQ((*set.pick("v1"))->name(), "v1");
  EXPECT_EQ((*set.pick("v2"))->name(), "v2");
  const auto missing = set.pick("v9");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  // The loaded versions' names are not told to whoever asked (only the admin API lists them).
  EXPECT_EQ(missing.status().message().find("v1"), std::string::npos) << missing.status().message();
  EXPECT_NE(missing.status().message().find("v9"), std::string::npos) << missing.status().message();
  const VersionSetState s = set.state();
  EXPECT_EQ(s.candidate, "v2");
  EXPECT_EQ(s.canary_requests, 100);
}

TEST(VersionSetTest, PromoteAbortRollbackAndRetirement) {
  VersionSet set(load("v1"));
  set.start_canary(load("v2"), 0.5);
  ASSERT_TRUE(set.promote(/*keep_previous=*/true).ok());
  EXPECT_EQ(set.current()->name(), "v2");
  EXPECT_EQ(set.previous()->name(), "v1");
  EXPECT_EQ(set.promote(true).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(set.abort().code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(set.rollback().ok());  // loaded: a swap
  EXPECT_EQ(set.current()->name(), "v1");
  EXPECT_EQ(set.previous()->name(), "v2");

  // A request in flight keeps a replaced version alive until it lets go.
  VersionPtr in_flight = *set.pick("v2");
  set.switch_to(load("v3"), /*keep_previous=*/false);  // v1 and v2 both leave
  EXPECT_EQ(set.current()->name(), "v3");
  EXPECT_EQ(set.previous(), nullptr);
  EXPECT_EQ(set.rollback().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(set.reap(), 1);  // v1 goes; v2 is still held
  EXPECT_EQ(in_flight->name(), "v2");
  in_flight.reset();
  EXPECT_EQ(set.reap(), 1);
  EXPECT_EQ(set.reap(), 0);
  set.start_canary(load("v4"), 0.1);
  ASSERT_TRUE(set.abort().ok());
  EXPECT_EQ(set.candidate(), nullptr);
  EXPECT_EQ(set.reap(), 1);
}

}  // namespace
}  // namespace llms
