// llmserve serve -m MODEL.gguf|DIR [--type T] [--host H] [--port P] [--config FILE.toml] [--print-config] [flags]
// Every key of the config file is also a flag (src/server/config_file.h); flags win.
#include <pthread.h>
#include <signal.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <csignal>
#include <cstdio>

#include "base/log.h"
#include "cli/commands.h"
#include "cli/config_flags.h"
#include "server/config_file.h"
#include "server/llm_server.h"
#include "server/model_list.h"
#include "dist/mpi_world.h"
#include "serving/tensor_parallel_group.h"

namespace llms::cli {
namespace {

struct Options {
  std::string config_file;
  bool print_config = false;
  std::unique_ptr<ConfigFlags> flags;  // every key of the table
  std::string type;  // shorthand for precision_variants = TYPE: the weights quantized at load
  int tensor_parallel = 1;
  int pipeline_parallel = 1;
  double step_timeout_s = 30;

  // How the group splits the model; its size is tensor × pipeline.
  Parallelism parallel() const { return {tensor_parallel, pipeline_parallel}; }
  int group_size() const { return parallel().ranks(); }
};

// Defaults, then the config file, then the flags (read again on SIGHUP).
Result<ServeConfig> effective_config(const Options& o) {
  ServeConfig c;
  if (!o.config_file.empty()) LLMS_RETURN_IF_ERROR(load_config_file(o.config_file, c));
  if (!o.type.empty()) {
    if (Status s = set_config_value(c, "precision_variants", o.type); !s.ok()) return s.with_context("--type");
  }
  o.flags->apply(c);  // the flags were checked at start: a bad one has failed then
  return c;
}

// Blocks SIGTERM/SIGINT/SIGHUP in this thread and every thread it starts, so that
// sigwait() below is the one place they arrive.
sigset_t block_server_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

// SIGHUP: the config file read again (flags still win) and its reloadable keys applied.
void reload(const Options& o, LlmServer& server, Communicator* group) {
  log_info("SIGHUP: reloading {}", o.config_file.empty() ? "(no config file: flags only)" : o.config_file);
  Result<ServeConfig> next = effective_config(o);
  if (next.ok()) {
    next->engine.ranks = group;
    next->engine.parallel = o.parallel();
  }
  Status s = next.ok() ? server.reload(*next) : next.status();
  if (!s.ok()) log_error("SIGHUP: configuration not reloaded: {}", s.to_string());
}

// --tensor-parallel N and/or --pipeline-parallel M: this process's rank of the group
// mpirun started. Ranks > 0 run their share until rank 0 stops them and exit here; rank 0
// returns the group.
std::unique_ptr<Communicator> join_group(const Options& o, const ServeConfig& config) {
  if (o.group_size() <= 1) return nullptr;
  if (config.server.model_path.empty()) {
    fail(unimplemented(fmt::format("{} serves a model file (-m), not a model root", group_flags(o.parallel()))));
  }
  const GroupOptions g{o.parallel(), o.step_timeout_s, config.server.model_path, config.engine.threads};
  auto ranks = value_or_fail(open_serving_group(g));
  if (ranks->rank() == 0) return ranks;
  // A worker ends when rank 0 says stop; mpirun's forwarded SIGINT/SIGTERM is rank 0's to handle.
  block_server_signals();
  const Status s = run_group_worker(*ranks, g);
  if (!s.ok()) fail(s.with_context(fmt::format("rank {}", ranks->rank())));
  throw CLI::Success();
}

// Waits for SIGTERM or SIGINT (returned), reloading on SIGHUP; with a group, also
// returns (0) once it has failed.
int wait_for_signal(const Options& o, const sigset_t& signals, LlmServer& server, Communicator* group) {
  for (;;) {
    timespec tick{0, 100'000'000};
    const int sig = group ? sigtimedwait(&signals, nullptr, &tick) : [&] {
      int s = 0;
      return sigwait(&signals, &s) == 0 ? s : -1;
    }();
    if (sig == SIGHUP) {
      reload(o, server, group);
    } else if (sig > 0) {
      return sig;
    } else if (group && !group->health().ok()) {
      return 0;
    }
  }
}

void run(const Options& o) {
  ServeConfig config = value_or_fail(effective_config(o));
  if (o.print_config) {
    ok_or_fail(config.validate());
    std::fputs(config_to_toml(config).c_str(), stdout);
    return;
  }
  std::signal(SIGPIPE, SIG_IGN);  // a closed socket or stdout is an error value, not death
  // Every rank says so, before the group forms.
  if (o.group_size() > 1 && !config.server.lora.empty()) {
    fail(invalid_argument(fmt::format("--lora: adapters cannot be served under {} (a rank holds a share of the "
                                      "weights)", group_flags(o.parallel()))));
  }
  if (o.group_size() > 1 && serves_several_models(config.server)) {
    fail(invalid_argument(fmt::format("{} splits one model over the ranks; serve several models (--model NAME=PATH, "
                                      "--models-dir) without it", group_flags(o.parallel()))));
  }
  const std::unique_ptr<Communicator> group = join_group(o, config);
  config.engine.ranks = group.get();
  config.engine.parallel = o.parallel();
  const sigset_t signals = block_server_signals();
  auto server = value_or_fail(LlmServer::start(config));
  // Several models: 'a', 'b' (the default first).
  const std::string names = fmt::format("'{}'", fmt::join(server->context().model_names(), "', '"));
  std::printf("llmserve: serving %s on http://%s:%d\n", names.c_str(), config.server.host.c_str(), server->port());
  std::fflush(stdout);
  const int sig = wait_for_signal(o, signals, *server, group.get());
  const Status lost = group ? group->health() : ok_status();
  if (!lost.ok()) {
    // Every request in flight has had its 503; the orchestrator restarts the group.
    log_error("{}: the group failed ({}); shutting down", group_flags(o.parallel()), lost.to_string());
  } else {
    log_info("{}: shutting down (up to {} s for requests in flight)", sig == SIGTERM ? "SIGTERM" : "SIGINT",
             config.server.shutdown_timeout_s);
  }
  server->shutdown();
  server.reset();
  if (!lost.ok()) {
    std::fprintf(stderr, "error: %s group: %s\n", group_flags(o.parallel()).c_str(), lost.message().c_str());
    abort_mpi_world(1);  // every rank ends; mpirun exits non-zero
  }
  std::printf("llmserve: stopped\n");
  std::fflush(stdout);
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("serve", "Serve a model over an OpenAI-compatible HTTP API");
  cmd->add_option("--config", o->config_file, "TOML file of configuration keys (flags win over it)");
  cmd->add_flag("--print-config", o->print_config, "Print the effective configuration (TOML) and exit");
  o->flags = std::make_unique<ConfigFlags>(cmd);
  cmd->add_option("--type", o->type,
                  "Quantize the weights to this type at load (q8_0, q4_k, ...; same as --precision-variants TYPE), "
                  "as `llmserve quantize` would");
  cmd->add_option("--tensor-parallel", o->tensor_parallel,
                  "Split the model over this many ranks (Megatron-style), started together by mpirun -np N; rank 0 "
                  "serves HTTP. With --pipeline-parallel M: N ranks in each of M stages, mpirun -np N*M")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--pipeline-parallel", o->pipeline_parallel,
                  "Split the model's layers into this many stages (balanced by bytes), one per rank, started together "
                  "by mpirun -np M; rank 0 (the first stage) serves HTTP. With --tensor-parallel N: N ranks per stage, "
                  "mpirun -np N*M")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--step-timeout-s", o->step_timeout_s,
                  "With --tensor-parallel or --pipeline-parallel: the longest a step waits for the other ranks before "
                  "the group is failed")
      ->check(CLI::PositiveNumber);
  cmd->callback([o] { run(*o); });
}

}  // namespace llms::cli
