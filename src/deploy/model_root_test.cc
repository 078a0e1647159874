#include "deploy/model_root.h"

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "deploy/version_meta.h"

namespace llms {
namespace {

namespace fs = std::filesystem;

std::string fresh_dir(const std::string& name) {
  const std::string d = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_" + name;
  fs::remove_all(d);
  return d;
}

std::string write_file(const std::string& path, const std::string& content) {
  std::ofstream(path) << content;
  return path;
}

TEST(ModelRootTest, VersionNamesAreChecked) {
  for (const char* ok : {"v1", "2026-12-01_q8.0", "A-b_C.9"}) EXPECT_TRUE(check_version_name(ok).ok()) << ok;
  for (const char* bad : {"", ".", "..", "../etc", "a/b", ".hidden", "v 1", "v1\n", "\xc3\xa9"}) {
    EXPECT_EQ(check_version_name(bad).code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_FALSE(check_version_name(std::string(101, 'a')).ok());
}

TEST(ModelRootTest, InstallSwitchRollback) {
  const std::string dir = fresh_dir("root");
  auto root = ModelRoot::open(dir, true);
  ASSERT_TRUE(root.ok()) << root.status().to_string();
  EXPECT_FALSE(root->current());
  const std::string a = write_file(dir + "_a.gguf", "weights of a"), b = write_file(dir + "_b.gguf", "weights of b");
  const std::string meta = write_file(dir + "_meta.toml", "notes = \"b\"\nkv_type = \"q8_0\"\n");
  ASSERT_TRUE(root->install("v1", a, false).ok());
  ASSERT_TRUE(root->install("v2", b, true, meta).ok());
  EXPECT_EQ(root->install("v1", a, false).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(root->install("../x", a, false).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(root->install("v3", dir + "_missing.gguf", false).code(), StatusCode::kNotFound);
  EXPECT_FALSE(fs::exists(root->version_dir("v3")));

  ASSERT_TRUE(root->switch_to("v1").ok());
  EXPECT_EQ(root->current(), "v1");
  EXPECT_FALSE(root->previous());
  ASSERT_TRUE(root->switch_to("v2").ok());
  EXPECT_EQ(root->current(), "v2");
  EXPECT_EQ(root->previous(), "v1");
  EXPECT_EQ(fs::read_symlink(dir + "/current"), "versions/v2");  // relative: the root can move
  std::ifstream in(root->model_path("v2"));
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "weights of b");
  auto m = read_version_meta(root->meta_path("v2"));
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->notes, "b");
  EXPECT_EQ(m->k_type, DType::kQ8_0);
  EXPECT_EQ(m->v_type, DType::kQ8_0);

  ASSERT_TRUE(root->rollback().ok());
  EXPECT_EQ(root->current(), "v1");
  EXPECT_EQ(root->previous(), "v2");
  EXPECT_EQ(root->switch_to("nope").code(), StatusCode::kNotFound);
  const auto versions = root->versions();
  ASSERT_EQ(versions.size(), 2u);
  EXPECT_TRUE(versions[0].current && versions[1].previous);
  EXPECT_EQ(versions[0].model_bytes, 12);
  EXPECT_EQ(ModelRoot::open(dir + "_none", false).status().code(), StatusCode::kNotFound);
}

// Refused and killed versions are marked; prune removes them, but never the current
// or previous version, whatever its mark.
TEST(ModelRootTest, MarkedVersionsArePruned) {
  const std::string dir = fresh_dir("prune");
  auto root = ModelRoot::open(dir, true);
  ASSERT_TRUE(root.ok()) << root.status().to_string();
  const std::string w = write_file(dir + "_w.gguf", "weights");
  for (const char* v : {"v1", "v2", "v3", "v4", "v5"}) ASSERT_TRUE(root->install(v, w, false).ok()) << v;
  ASSERT_TRUE(root->switch_to("v1").ok());
  ASSERT_TRUE(root->switch_to("v2").ok());  // v1 previous, v2 current
  ASSERT_TRUE(root->mark("v1", "killed", "canary aborted").ok());
  ASSERT_TRUE(root->mark("v3", "refused", "refused_gate: KL 2.1 > 0.02").ok());
  ASSERT_TRUE(root->mark("v4", "killed", "canary aborted").ok());
  EXPECT_EQ(root->mark("v9", "refused", "x").code(), StatusCode::kNotFound);
  const std::vector<VersionInfo> before = root->versions();
  ASSERT_EQ(before.size(), 5u);
  EXPECT_EQ(before[2].mark, "refused");
  EXPECT_NE(before[2].mark_reason.find("KL 2.1 > 0.02"), std::string::npos) << before[2].mark_reason;
  EXPECT_EQ(before[3].mark, "killed");
  EXPECT_EQ(before[4].mark, "");
  auto removed = root->prune();
  ASSERT_TRUE(removed.ok()) << removed.status().to_string();
  EXPECT_EQ(*removed, (std::vector<std::string>{"v3", "v4"}));
  std::vector<std::string> left;
  for (const VersionInfo& v : root->versions()) left.push_back(v.name);
  EXPECT_EQ(left, (std::vector<std::string>{"v1", "v2", "v5"}));
  EXPECT_FALSE(fs::exists(dir + "/versions/v3"));
  EXPECT_EQ(root->current().value_or(""), "v2");
}

TEST(ModelRootTest, MetaErrorsNameTheKey) {
  EXPECT_NE(parse_version_meta("gate_max_kl = \"big\"\n", "m.toml").status().message().find("gate_max_kl"),
            std::string::npos);
  EXPECT_NE(parse_version_meta("kv_type = \"q9\"\n", "m.toml").status().message().find("kv_type"), std::string::npos);
  EXPECT_NE(parse_version_meta("colour = 1\n", "m.toml").status().message().find("unknown key 'colour'"),
            std::string::npos);
  auto m = parse_version_meta("gate_max_kl = 0.02\ngate_min_top1 = 0.97\n", "m.toml");
  ASSERT_TRUE(m.ok());
  EXPECT_DOUBLE_EQ(*m->gate_max_kl, 0.02);
  EXPECT_DOUBLE_EQ(*m->gate_min_top1, 0.97);
}

// A deploy killed (SIGKILL) at every step of install + switch leaves `current`
// naming a complete version, and the next deploy of the same version succeeds.
TEST(ModelRootTest, KillAtEveryStepLeavesACompleteCurrent) {
  const std::string dir = fresh_dir("crash");
  auto root = ModelRoot::open(dir, true);
  ASSERT_TRUE(root.ok());
  const std::string good = write_file(dir + "_v0.gguf", std::string(3 << 20, 'x'));  // several copy chunks
  ASSERT_TRUE(root->install("v0", good, false).ok());
  ASSERT_TRUE(root->switch_to("v0").ok());
  int n = 0;
  for (const char* step : {"copy", "copied", "link", "previous"}) {
    const std::string name = "v" + std::to_string(++n);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      setenv("LLMSERVE_DEPLOY_CRASH_AT", step, 1);
      auto r = ModelRoot::open(dir, false);
      const bool ok = r.ok() && r->install(name, good, false).ok() && r->switch_to(name).ok();
      _exit(ok ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << step;
    const auto cur = root->current();
    ASSERT_TRUE(cur) << "after a crash at " << step;
    EXPECT_EQ(fs::file_size(root->model_path(*cur)), fs::file_size(good)) << step;
    // The same deploy, run again, completes.
    Status again = root->install(name, good, false);
    if (again.code() == StatusCode::kAlreadyExists) again = ok_status();  // the crash came after the copy
    ASSERT_TRUE(again.ok()) << step << ": " << again.to_string();
    ASSERT_TRUE(root->switch_to(name).ok()) << step;
    EXPECT_EQ(root->current(), name);
  }
  for (const auto& e : fs::directory_iterator(dir + "/versions")) {
    EXPECT_EQ(e.path().filename().string().rfind(".incoming-", 0), std::string::npos) << "left over: " << e.path();
  }
}

}  // namespace
}  // namespace llms
