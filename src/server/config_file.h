// The configuration keys of `llmserve serve`: one table that drives the TOML config
// file, the command-line flags (key kv_block_size ↔ flag --kv-block-size) and
// --print-config, so the three can never disagree. Precedence: defaults, then the
// file, then flags. An unknown key or a value of the wrong type or range is an error
// that names the key.
//
// Value syntax (flags and file): integers, numbers, booleans (true/false), strings;
// byte sizes as integers or with a binary suffix ("64MiB", "2G").
//
// Thread-safety: pure functions; the key table is immutable.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "server/server_config.h"

namespace llms {

enum class ConfigType { kInt, kNumber, kBool, kString, kBytes };

struct ConfigKey {
  std::string name;  // TOML key; the flag is --name with '_' → '-'
  ConfigType type;
  std::string help;
  std::function<Status(ServeConfig&, const std::string&)> set;  // parses the text form
  std::function<std::string(const ServeConfig&)> get;            // TOML literal
  bool secret = false;  // get() never returns the value; --print-config comments it out
};

const std::vector<ConfigKey>& config_keys();
std::string config_flag_name(const std::string& key);

// Sets one key from its text form; INVALID_ARGUMENT names the key.
Status set_config_value(ServeConfig& c, std::string_view key, const std::string& value);
// Reads a TOML file of top-level `key = value` lines over `c`.
Status load_config_file(const std::string& path, ServeConfig& c);
// Same, from TOML text (`origin` names it in errors).
Status load_config_text(std::string_view toml, const std::string& origin, ServeConfig& c);
// The whole configuration as TOML that load_config_text() reads back; a secret that
// is set (api_key) is printed as a comment saying it is redacted, so it never shows.
std::string config_to_toml(const ServeConfig& c);

}  // namespace llms
