// The configuration keys (config_file.h) whose text is parsed into more than a number,
// a size or a string: the chat template file, scheduling and speculative modes, early
// exit layers, precision variants and limits, the deploy's swap mode. config_file.cc
// lists them with the plain keys (config_keys.h).
//
// Thread-safety: pure functions; the keys they make are immutable.
#pragma once

#include <string>
#include <vector>

#include "server/config_file.h"
#include "server/config_keys.h"
#include "serving/precision_policy.h"

namespace llms {

ConfigKey chat_template_file_key();
ConfigKey batching_key();
ConfigKey autotune_key();
ConfigKey speculative_key();
ConfigKey exit_layers_key();
ConfigKey precision_variants_key();
ConfigKey precision_limits_key(const char* name, std::string help, std::vector<int> PrecisionPolicy::*field);
ConfigKey swap_key();

}  // namespace llms
