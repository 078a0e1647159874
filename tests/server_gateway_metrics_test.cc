// What a gateway in front of replicas relies on. The metrics a Gateway API inference
// extension endpoint picker (and load tools made for vLLM) read, under vLLM's names:
// each present with its type and a model_name label, the queue and KV gauges following
// real load, and all of it gone with metrics_compat = "none". And the shutdown delay
// that lets a balancer take a replica out of rotation before it closes.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <thread>

#include "server_test_util.h"

namespace llms::test {
namespace {

// Sum of every series of `name` (any labels) in an exposition; NaN when there is none.
double sum_series(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  double sum = 0;
  bool found = false;
  while (std::getline(in, line)) {
    if (line.rfind(name + "{", 0) != 0 && line.rfind(name + " ", 0) != 0) continue;
    sum += std::stod(line.substr(line.rfind(' ') + 1));
    found = true;
  }
  return found ? sum : std::nan("");
}

// The TYPE line of `name`, "" when absent.
std::string type_of(const std::string& text, const std::string& name) {
  const std::string key = "# TYPE " + name + " ";
  const size_t at = text.find(key);
  if (at == std::string::npos) return "";
  return text.substr(at + key.size(), text.find('\n', at) - at - key.size());
}

TEST(ServerGatewayMetrics, ProtocolMetricsUnderVllmNamesFollowTheLoad) {
  auto server = start_server(slow_synthetic_path(), [](ServeConfig& c) { c.engine.batching.max_running = 1; });
  const int port = server->port();
  const std::string model = server->context().model_name;
  const std::string idle = http_get(port, "/metrics").body;
  const std::vector<std::pair<std::string, std::string>> protocol = {
      {"vllm:num_requests_waiting", "gauge"},        {"vllm:num_requests_running", "gauge"},
      {"vllm:kv_cache_usage_perc", "gauge"},         {"vllm:gpu_cache_usage_perc", "gauge"},
      {"vllm:cache_config_info", "gauge"},           {"vllm:time_to_first_token_seconds", "histogram"},
      {"vllm:request_queue_time_seconds", "histogram"}, {"vllm:e2e_request_latency_seconds", "histogram"},
      {"vllm:time_per_output_token_seconds", "histogram"}, {"vllm:inter_token_latency_seconds", "histogram"},
      {"vllm:prompt_tokens_total", "counter"},       {"vllm:generation_tokens_total", "counter"},
      {"vllm:num_preemptions_total", "counter"},     {"vllm:prefix_cache_queries_total", "counter"},
      {"vllm:prefix_cache_hits_total", "counter"},
  };
  for (const auto& [name, type] : protocol) {
    EXPECT_EQ(type_of(idle, name), type) << name;
    const std::string series = type == "histogram" ? name + "_count{" : name + "{";
    const size_t at = idle.find("\n" + series);
    ASSERT_NE(at, std::string::npos) << name;
    const std::string line = idle.substr(at + 1, idle.find('\n', at + 1) - at - 1);
    EXPECT_NE(line.find("model_name=\"" + model + "\""), std::string::npos) << line;
  }
  const std::string info_key = "vllm:cache_config_info{";
  const std::string info = idle.substr(idle.find("\n" + info_key) + 1);
  EXPECT_NE(info.find("block_size=\"" + std::to_string(server->context().config.engine.kv.block_size) + "\""),
            std::string::npos);
  EXPECT_NE(info.find("num_gpu_blocks=\""), std::string::npos);
  EXPECT_EQ(sum_series(idle, "vllm:num_requests_waiting"), 0);
  EXPECT_EQ(sum_series(idle, "vllm:kv_cache_usage_perc"), 0);

  // Three long requests on a server that runs one at a time: two wait, one holds KV.
  std::vector<std::thread> clients;
  for (int i = 0; i < 3; ++i) {
    clients.emplace_back([port, i] {
      http_post(port, "/v1/completions",
                Json{{"prompt", "load " + std::to_string(i)}, {"max_tokens", 400}, {"ignore_eos", true}});
    });
  }
  double waiting = 0, usage = 0;
  EXPECT_TRUE(poll_until([&] {
    const std::string t = http_get(port, "/metrics").body;
    waiting = sum_series(t, "vllm:num_requests_waiting");
    usage = sum_series(t, "vllm:kv_cache_usage_perc");
    return waiting >= 1 && usage > 0;
  })) << "waiting " << waiting << ", KV use " << usage;
  for (auto& c : clients) c.join();
  // The engine publishes its gauges after the step that freed the last blocks.
  std::string after;
  EXPECT_TRUE(poll_until([&] {
    after = http_get(port, "/metrics").body;
    return sum_series(after, "vllm:num_requests_waiting") == 0 && sum_series(after, "vllm:kv_cache_usage_perc") == 0;
  })) << after;
  // The aliases read the same values as llmserve's own metrics.
  EXPECT_EQ(sum_series(after, "vllm:generation_tokens_total"), sum_series(after, "llmserve_generation_tokens_total"));
  EXPECT_EQ(sum_series(after, "vllm:generation_tokens_total"), 3 * 400);
  EXPECT_EQ(sum_series(after, "vllm:time_to_first_token_seconds_count"), 3);
}

TEST(ServerGatewayMetrics, CompatNoneShowsOnlyLlmserveNames) {
  auto server = start_server(synthetic_path(), [](ServeConfig& c) { c.server.metrics_compat = "none"; });
  const std::string text = http_get(server->port(), "/metrics").body;
  EXPECT_EQ(text.find("vllm:"), std::string::npos);
  EXPECT_NE(text.find("llmserve_requests_waiting"), std::string::npos);
  ServeConfig bad;
  bad.server.model_path = synthetic_path();
  bad.server.metrics_compat = "sglang";
  const Status s = bad.validate();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("metrics_compat"), std::string::npos) << s.message();
}

// The preStop pattern: after the shutdown signal, /ready fails at once while new
// connections and requests are still served for shutdown_delay; then the server drains.
TEST(ServerGatewayMetrics, ShutdownDelayServesWhileReadyFails) {
  auto server = start_server(synthetic_path(), [](ServeConfig& c) { c.server.shutdown_delay_s = 5; });
  const int port = server->port();
  ASSERT_EQ(http_get(port, "/ready").status, 200);
  std::thread stopper([&] { server->shutdown(); });
  HttpResult ready;
  EXPECT_TRUE(poll_until([&] {
    ready = http_get(port, "/ready");
    return ready.status == 503;
  }));
  EXPECT_NE(ready.body.find("shutdown_delay"), std::string::npos) << ready.body;
  const HttpResult r = http_post(port, "/v1/completions", Json{{"prompt", "still here"}, {"max_tokens", 4}});
  EXPECT_EQ(r.status, 200) << r.body;
  stopper.join();
  EXPECT_EQ(http_get(port, "/health").status, 0);  // closed after the delay and the drain
}

}  // namespace
}  // namespace llms::test
