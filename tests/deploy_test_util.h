// Helpers of the end-to-end tests of the model lifecycle (server_deploy_test.cc,
// server_quality_test.cc): a model root whose `v1` is stories260K, a server on it with
// the admin API on, and the admin calls.
#pragma once

#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>

#include "deploy/model_root.h"
#include "server_test_util.h"

namespace llms::test {

inline constexpr const char* kToken = "a-token-of-twenty-chars";
inline const Headers kAuth = {{"Authorization", std::string("Bearer ") + kToken}};

inline std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/" + std::to_string(getpid()) + "_deploy_" + name;
}

inline std::string write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

struct Root {
  std::string dir;
  ModelRoot root;
};

// A fresh model root `name` whose current version, v1, is stories260K.
inline Root make_root(const std::string& name) {
  const std::string dir = temp_path(name);
  std::filesystem::remove_all(dir);
  Root r{dir, ModelRoot::open(dir, true).value()};
  EXPECT_TRUE(r.root.install("v1", stories_path(), true).ok());
  EXPECT_TRUE(r.root.switch_to("v1").ok());
  return r;
}

inline std::unique_ptr<LlmServer> start_on_root(const std::string& dir,
                                                const std::function<void(ServeConfig&)>& tweak = {}) {
  const std::string token = write_text(temp_path("token"), std::string(kToken) + "\n");
  return start_server("", [&](ServeConfig& c) {
    c.server.model_path.clear();
    c.server.model_root = dir;
    c.server.admin_token_file = token;
    c.engine.kv.cache_bytes = 8 << 20;
    if (tweak) tweak(c);
  });
}

inline HttpResult admin(int port, const std::string& action, const Json& body = Json::object()) {
  return http_post(port, "/admin/" + action, body, kAuth);
}

}  // namespace llms::test
