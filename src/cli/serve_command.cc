// llmserve serve -m MODEL.gguf|DIR [--type T] [--host H] [--port P] [--config FILE.toml] [--print-config] [flags]
// Every key of the config file is also a flag (src/server/config_file.h); flags win.
#include <pthread.h>
#include <signal.h>

#include <csignal>
#include <cstdio>

#include "base/log.h"
#include "cli/commands.h"
#include "cli/config_flags.h"
#include "server/config_file.h"
#include "server/llm_server.h"

namespace llms::cli {
namespace {

struct Options {
  std::string config_file;
  bool print_config = false;
  std::unique_ptr<ConfigFlags> flags;  // every key of the table
  std::string type;  // shorthand for precision_variants = TYPE: the weights quantized at load
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
void reload(const Options& o, LlmServer& server) {
  log_info("SIGHUP: reloading {}", o.config_file.empty() ? "(no config file: flags only)" : o.config_file);
  Result<ServeConfig> next = effective_config(o);
  Status s = next.ok() ? server.reload(*next) : next.status();
  if (!s.ok()) log_error("SIGHUP: configuration not reloaded: {}", s.to_string());
}

void run(const Options& o) {
  const ServeConfig config = value_or_fail(effective_config(o));
  if (o.print_config) {
    ok_or_fail(config.validate());
    std::fputs(config_to_toml(config).c_str(), stdout);
    return;
  }
  std::signal(SIGPIPE, SIG_IGN);  // a closed socket or stdout is an error value, not death
  const sigset_t signals = block_server_signals();
  auto server = value_or_fail(LlmServer::start(config));
  std::printf("llmserve: serving '%s' on http://%s:%d\n", server->context().model_name.c_str(),
              config.server.host.c_str(), server->port());
  std::fflush(stdout);
  int sig = 0;
  while (sigwait(&signals, &sig) == 0 && sig == SIGHUP) reload(o, *server);
  log_info("{}: shutting down (up to {} s for requests in flight)", sig == SIGTERM ? "SIGTERM" : "SIGINT",
           config.server.shutdown_timeout_s);
  server->shutdown();
  server.reset();
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
  cmd->callback([o] { run(*o); });
}

}  // namespace llms::cli
