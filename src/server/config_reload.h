// What SIGHUP may change without a restart: the keys of the config file that are
// reloadable (log_level, log_format, log_file, access_log, shutdown_delay,
// shutdown_timeout), and the difference between two configurations key by key, which
// LlmServer::reload() applies and logs (a changed key that is not reloadable is logged
// as needing a restart). Secrets compare by their redacted form: never logged.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/server_config.h"

namespace llms {

struct ConfigChange {
  std::string key;
  std::string before, after;  // TOML literals
  bool reloadable = false;
};

bool config_key_reloadable(std::string_view key);
// Every key whose value differs, in the key table's order.
std::vector<ConfigChange> config_changes(const ServeConfig& before, const ServeConfig& after);

}  // namespace llms
