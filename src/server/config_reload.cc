#include "server/config_reload.h"

#include <algorithm>
#include <array>

#include "server/config_file.h"

namespace llms {

bool config_key_reloadable(std::string_view key) {
  static constexpr std::array<std::string_view, 6> kReloadable = {"log_level",  "log_format",     "log_file",
                                                                 "access_log", "shutdown_delay", "shutdown_timeout"};
  return std::find(kReloadable.begin(), kReloadable.end(), key) != kReloadable.end();
}

std::vector<ConfigChange> config_changes(const ServeConfig& before, const ServeConfig& after) {
  std::vector<ConfigChange> out;
  for (const ConfigKey& k : config_keys()) {
    std::string b = k.get(before), a = k.get(after);
    if (b != a) out.push_back({k.name, std::move(b), std::move(a), config_key_reloadable(k.name)});
  }
  return out;
}

}  // namespace llms
