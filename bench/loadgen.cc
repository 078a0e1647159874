// llmserve_loadgen: N concurrent streaming completion requests against an llmserve
// server, all sent at once (closed batch, one per connection), timed by the same client
// as `llmserve bench serve` (src/benchserve/, cpp-httplib); reports how many completed,
// time to first token and inter-token latency percentiles, and tokens per second.
//
//   llmserve_loadgen --port 8080 [--connections 1000] [--max-tokens 32] [--chat]
//   llmserve_loadgen --serve build/release/src/cli/llmserve -m MODEL.gguf [--server-args "..."] ...
// With --serve it starts the server itself (port chosen by the server), waits for
// /ready, runs the load, stops the server with SIGTERM and checks it exited 0.
// Exit status 0 only when every request completed. For open-loop load, rates and
// goodput, use `llmserve bench serve`.
#include <signal.h>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

#include "benchserve/bench_result.h"
#include "benchserve/bench_run.h"
#include "serve_child.h"

namespace {

namespace bs = llms::benchserve;

struct Options {
  std::string host = "127.0.0.1";
  int port = 0;
  int connections = 1000;
  int max_tokens = 32;
  std::string prompt = "Once upon a time";
  bool chat = false;
  double timeout_s = 600;
  std::string serve_bin, model, server_args;
};

int run_load(const Options& o) {
  llms::bench::raise_fd_limit();
  bs::BenchOptions b;
  b.base_url = "http://" + o.host + ":" + std::to_string(o.port);
  b.endpoint = o.chat ? "/v1/chat/completions" : "/v1/completions";
  b.num_prompts = o.connections;
  b.ignore_eos = true;
  b.temperature = 0.8;
  b.timeout_s = o.timeout_s;
  b.percentiles = {50, 90, 99, 100};
  const std::vector<bs::BenchPrompt> prompts(static_cast<size_t>(o.connections), bs::BenchPrompt{o.prompt, o.max_tokens});
  const bs::RunOutput run = bs::run_benchmark(b, "", bs::kInfiniteRate, prompts, bs::terminal_progress("load"));
  const bs::BenchResult r = bs::compute_result(run, b);
  std::printf("connections: %d requested, %d at once at most; completed: %d; failed: %d%s%s\n", o.connections,
              r.peak_concurrency, r.completed, r.failed, r.errors.empty() ? "" : "; first error: ",
              r.errors.empty() ? "" : r.errors[0].first.c_str());
  std::printf("tokens: %lld in %.2f s = %.1f tokens/s\n", r.total_output_tokens, r.duration_s, r.output_throughput);
  const auto& t = r.ttft_ms;
  const auto& i = r.itl_ms;
  std::printf("TTFT s: p50 %.3f  p90 %.3f  p99 %.3f  max %.3f\n", t.median / 1e3, t.at(90) / 1e3, t.at(99) / 1e3,
              t.at(100) / 1e3);
  std::printf("ITL  s: p50 %.4f  p90 %.4f  p99 %.4f  max %.4f\n", i.median / 1e3, i.at(90) / 1e3, i.at(99) / 1e3,
              i.at(100) / 1e3);
  const bool all = r.completed == o.connections;
  std::printf("%s: %d of %d streaming requests completed\n", all ? "OK" : "FAILED", r.completed, o.connections);
  return all ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Concurrent streaming load against an llmserve server"};
  app.add_option("--host", o.host, "Server address")->capture_default_str();
  app.add_option("--port", o.port, "Server port (with --serve: chosen by the server)");
  app.add_option("-c,--connections", o.connections, "Concurrent streaming requests")->capture_default_str();
  app.add_option("-n,--max-tokens", o.max_tokens, "Tokens per request (ignore_eos)")->capture_default_str();
  app.add_option("--prompt", o.prompt, "Prompt")->capture_default_str();
  app.add_flag("--chat", o.chat, "Use /v1/chat/completions");
  app.add_option("--timeout", o.timeout_s, "Per-request timeout, seconds")->capture_default_str();
  app.add_option("--serve", o.serve_bin, "Start this llmserve binary first");
  app.add_option("-m,--model", o.model, "Model for --serve");
  app.add_option("--server-args", o.server_args, "Extra serve flags for --serve");
  CLI11_PARSE(app, argc, argv);
  if (o.connections < 1 || o.max_tokens < 1) {
    std::fprintf(stderr, "error: --connections and --max-tokens must be at least 1\n");
    return 1;
  }
  signal(SIGPIPE, SIG_IGN);
  llms::bench::ServeChild child;
  if (!o.serve_bin.empty()) {
    child = llms::bench::start_serve(o.serve_bin, o.model, o.host, o.server_args);
    o.port = child.port;
    if (child.pid < 0 || o.port == 0) {
      std::fprintf(stderr, "error: the server did not start\n");
      return 1;
    }
  }
  if (o.port == 0 || !llms::bench::wait_ready(o.host, o.port)) {
    std::fprintf(stderr, "error: no ready server on %s:%d\n", o.host.c_str(), o.port);
    return 1;
  }
  int rc = run_load(o);
  if (child.pid > 0) {
    const bool clean = llms::bench::stop_serve(child);
    std::printf("server stopped with SIGTERM: %s\n", clean ? "exit 0" : "NOT a clean exit");
    if (!clean) rc = 1;
  }
  return rc;
}
