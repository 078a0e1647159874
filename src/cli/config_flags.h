// The settings several commands share, declared once: each flag is a key of serve's
// configuration table (server/config_file.h), so `serve`, `generate` and
// `bench-engine` spell, document, parse and range-check it the same way. A command
// names the keys it takes; the spellings commands used before stay as aliases
// (`-c`/`--ctx` for --context-length, `--parallel` for --max-running, `--no-prefix-cache`
// for `--prefix-cache false`), and `--kv-type T` sets both KV types.
//
// A boolean key's flag takes an optional value: `--slo-shed` is `--slo-shed true`.
//
// Thread-safety: built and read on the CLI's thread, like every CLI11 option.
#pragma once

#include <CLI/CLI.hpp>

#include <map>
#include <string>
#include <vector>

#include "server/server_config.h"

namespace llms::cli {

class ConfigFlags {
 public:
  // Adds a flag for each of `keys` (every key of the table when empty) to `cmd`.
  ConfigFlags(CLI::App* cmd, const std::vector<std::string>& keys = {});
  ConfigFlags(const ConfigFlags&) = delete;
  ConfigFlags& operator=(const ConfigFlags&) = delete;

  // Sets the keys whose flags were given over `c`; a bad value fails the command,
  // naming the key's flag.
  void apply(ServeConfig& c) const;

 private:
  struct Flag {
    std::string value;
    CLI::Option* option = nullptr;
  };
  struct Negation {  // `--no-X`: the key set to false
    bool given = false;
    std::string key;
  };
  std::vector<std::string> keys_;
  std::map<std::string, Flag> flags_;  // key → its flag
  std::vector<std::unique_ptr<Negation>> negations_;
  std::string kv_type_;
};

// `-t,--threads`: kernel threads, 0 = one per core (the table's `threads`), for the
// commands that run kernels without an engine.
void add_threads_flag(CLI::App* cmd, int* threads);

}  // namespace llms::cli
