#include "server/config_file.h"

#include <gtest/gtest.h>

#include <cctype>
#include <functional>
#include <vector>

namespace llms {
namespace {

TEST(ConfigFileTest, FileSetsKeysOfEveryType) {
  ServeConfig c;
  const Status s = load_config_text(
      "model = \"m.gguf\"\nport = 9000\nmax_delay_ms = 5\nkv_high_watermark = 0.9\nprefix_cache = false\n"
      "result_cache_bytes = \"2MiB\"\nkv_k_type = \"f16\"\nbatching = \"dynamic\"\nkv_commit_at_start = true\n",
      "test.toml", c);
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(c.server.model_path, "m.gguf");
  EXPECT_EQ(c.server.port, 9000);
  EXPECT_DOUBLE_EQ(c.engine.batching.max_delay_ms, 5.0);
  EXPECT_DOUBLE_EQ(c.engine.admission.kv_high, 0.9);
  EXPECT_FALSE(c.engine.kv.prefix_cache);
  EXPECT_EQ(c.engine.result_cache_bytes, 2 << 20);
  EXPECT_EQ(c.engine.kv.k_type, DType::kF16);
  EXPECT_EQ(c.engine.batching.policy, BatchingPolicy::kDynamic);
  EXPECT_TRUE(c.engine.kv.commit_at_start);
}

TEST(ConfigFileTest, ErrorsNameTheKey) {
  ServeConfig c;
  Status s = load_config_text("no_such_key = 1\n", "f.toml", c);
  EXPECT_NE(s.message().find("unknown configuration key 'no_such_key'"), std::string::npos) << s.message();
  s = load_config_text("port = \"eighty\"\n", "f.toml", c);
  EXPECT_NE(s.message().find("port: expected an integer"), std::string::npos) << s.message();
  s = load_config_text("port = 70000\n", "f.toml", c);
  EXPECT_NE(s.message().find("port: 70000 is not in 0..65535"), std::string::npos) << s.message();
  s = set_config_value(c, "kv_v_type", "q9_9");
  EXPECT_NE(s.message().find("kv_v_type"), std::string::npos);
  s = set_config_value(c, "max_body_bytes", "12XB");
  EXPECT_FALSE(s.ok());
  s = load_config_text("port = [1\n", "broken.toml", c);
  EXPECT_NE(s.message().find("broken.toml:1"), std::string::npos) << s.message();
}

TEST(ConfigFileTest, PrintedConfigReadsBackIdentically) {
  ServeConfig a;
  ASSERT_TRUE(set_config_value(a, "chat_template", "say \"hi\"\\n").ok());
  ASSERT_TRUE(set_config_value(a, "aging", "2.5").ok());
  ASSERT_TRUE(set_config_value(a, "max_delay_ms", "20").ok());
  const std::string text = config_to_toml(a);
  ServeConfig b;
  ASSERT_TRUE(load_config_text(text, "printed", b).ok()) << text;
  EXPECT_EQ(config_to_toml(b), text);
  EXPECT_EQ(b.server.chat_template, "say \"hi\"\\n");
  EXPECT_DOUBLE_EQ(b.engine.batching.aging_s, 2.5);
}

// Every setting EngineConfig::validate() refuses is named by a key of the table, so
// the user can find what to change in the file or the flags.
TEST(ConfigFileTest, ValidationErrorsNameRealKeys) {
  auto named_keys = [](const std::string& message) {
    std::vector<std::string> found;
    for (const auto& k : config_keys()) {
      const size_t at = message.find(k.name);
      if (at == std::string::npos) continue;
      const size_t end = at + k.name.size();
      const auto word = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; };
      if ((at == 0 || !word(message[at - 1])) && (end == message.size() || !word(message[end]))) found.push_back(k.name);
    }
    return found;
  };
  const std::vector<std::function<void(EngineConfig&)>> breakers = {
      [](EngineConfig& e) { e.batching.max_batch_tokens = 0; },   [](EngineConfig& e) { e.batching.max_running = 0; },
      [](EngineConfig& e) { e.batching.max_batch_size = 0; },     [](EngineConfig& e) { e.batching.max_delay_ms = -1; },
      [](EngineConfig& e) { e.kv.block_size = 4; },         [](EngineConfig& e) { e.kv.cache_bytes = -1; },
      [](EngineConfig& e) { e.result_cache_bytes = -1; }, [](EngineConfig& e) { e.context_length = -1; },
      [](EngineConfig& e) { e.admission.max_waiting_requests = -1; },
      [](EngineConfig& e) { e.admission.max_waiting_tokens = -1; },
      [](EngineConfig& e) { e.admission.kv_low = 0.9, e.admission.kv_high = 0.5; },
      [](EngineConfig& e) { e.admission.rss_low = 0.9, e.admission.rss_high = 0.5; },
      [](EngineConfig& e) { e.admission.memory_limit_bytes = -1; }, [](EngineConfig& e) { e.default_timeout_s = 0; },
      [](EngineConfig& e) { e.batching.long_job_factor = 0.5; }, [](EngineConfig& e) { e.batching.long_job_share = 0; },
      [](EngineConfig& e) { e.batching.aging_s = 0; },            [](EngineConfig& e) { e.threads = -1; },
      [](EngineConfig& e) { e.stats_window = -1; },
      [](EngineConfig& e) { e.early_exit.threshold = 0; },    [](EngineConfig& e) { e.early_exit.layers = {0}; },
      [](EngineConfig& e) { e.early_exit.threshold = 0.9; },  // without exit layers
  };
  ASSERT_TRUE(EngineConfig{}.validate().ok());
  for (size_t i = 0; i < breakers.size(); ++i) {
    EngineConfig e;
    breakers[i](e);
    const Status s = e.validate();
    ASSERT_FALSE(s.ok()) << "case " << i;
    EXPECT_FALSE(named_keys(s.message()).empty()) << "case " << i << ": " << s.message();
  }
}

TEST(ConfigFileTest, HardeningKeysAndTheirChecks) {
  ServeConfig c;
  c.server.model_path = "m.gguf";
  const Status s = load_config_text(
      "header_timeout = 2\nbody_timeout = 3.5\nstream_stall_timeout = 4\nstream_buffer_bytes = \"8KiB\"\n"
      "max_connections = 100\nmax_connections_per_client = 0\napi_key_file = \"keys.txt\"\nprotect_metrics = true\n",
      "t.toml", c);
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_DOUBLE_EQ(c.server.header_timeout_s, 2);
  EXPECT_DOUBLE_EQ(c.server.body_timeout_s, 3.5);
  EXPECT_DOUBLE_EQ(c.server.stream_stall_timeout_s, 4);
  EXPECT_EQ(c.server.stream_buffer_bytes, 8 << 10);
  EXPECT_EQ(c.server.max_connections, 100);
  EXPECT_EQ(c.server.max_connections_per_client, 0);
  EXPECT_EQ(c.server.api_key_file, "keys.txt");
  EXPECT_TRUE(c.server.protect_metrics);
  EXPECT_TRUE(c.validate().ok()) << c.validate().to_string();
  const std::vector<std::pair<std::function<void(ServerConfig&)>, std::string>> breakers = {
      {[](ServerConfig& x) { x.header_timeout_s = 0; }, "header_timeout"},
      {[](ServerConfig& x) { x.body_timeout_s = -1; }, "body_timeout"},
      {[](ServerConfig& x) { x.stream_stall_timeout_s = 0; }, "stream_stall_timeout"},
      {[](ServerConfig& x) { x.stream_buffer_bytes = 100; }, "stream_buffer_bytes"},
      {[](ServerConfig& x) { x.max_connections = 0; }, "max_connections"},
      {[](ServerConfig& x) { x.max_connections_per_client = -1; }, "max_connections_per_client"},
      {[](ServerConfig& x) { x.api_key_file.clear(); }, "protect_metrics"},
  };
  for (const auto& [brk, key] : breakers) {
    ServeConfig bad = c;
    brk(bad.server);
    const Status v = bad.validate();
    EXPECT_FALSE(v.ok()) << key;
    EXPECT_EQ(v.message().rfind(key + ":", 0), 0u) << v.message();
  }
}

TEST(ConfigFileTest, TheApiKeyIsNeverPrinted) {
  ServeConfig c;
  const std::string key = "sk-very-secret-value";
  ASSERT_TRUE(set_config_value(c, "api_key", key).ok());
  EXPECT_EQ(c.server.api_key, key);
  const std::string text = config_to_toml(c);
  EXPECT_EQ(text.find(key), std::string::npos) << text;
  EXPECT_NE(text.find("# api_key is set; redacted"), std::string::npos) << text;
  for (const auto& k : config_keys()) EXPECT_EQ(k.get(c).find(key), std::string::npos) << k.name;
  ServeConfig back;  // the printed file reads back, without the key
  ASSERT_TRUE(load_config_text(text, "printed", back).ok());
  EXPECT_EQ(back.server.api_key, "");
  EXPECT_NE(config_to_toml(ServeConfig{}).find("api_key = \"\""), std::string::npos);
}

// --canary-feedback-min and --canary-feedback-margin: the feedback signal of the
// canary decision (deploy/deployer.h).
TEST(ConfigFileTest, CanaryFeedbackKeys) {
  ServeConfig c;
  c.server.model_path = "model.gguf";
  EXPECT_EQ(c.deploy.canary_auto.feedback_min, 0);  // off unless asked for
  ASSERT_TRUE(load_config_text("canary_feedback_min = 25\ncanary_feedback_margin = 0.4\n", "f.toml", c).ok());
  EXPECT_EQ(c.deploy.canary_auto.feedback_min, 25);
  EXPECT_DOUBLE_EQ(c.deploy.canary_auto.feedback_margin, 0.4);
  EXPECT_TRUE(c.validate().ok());
  EXPECT_FALSE(set_config_value(c, "canary_feedback_min", "-1").ok());
  ASSERT_TRUE(set_config_value(c, "canary_feedback_margin", "-0.1").ok());
  const Status s = c.validate();
  EXPECT_NE(s.message().find("canary_feedback_margin"), std::string::npos) << s.message();
  EXPECT_EQ(config_flag_name("canary_feedback_min"), "canary-feedback-min");
}

TEST(ConfigFileTest, EveryKeyHasAFlagName) {
  for (const auto& k : config_keys()) {
    EXPECT_EQ(config_flag_name(k.name).find('_'), std::string::npos);
    EXPECT_FALSE(k.help.empty()) << k.name;
  }
  EXPECT_EQ(config_flag_name("kv_block_size"), "kv-block-size");
}

}  // namespace
}  // namespace llms
