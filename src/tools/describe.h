// A description of a GGUF model file for `llmserve inspect`: architecture and
// hyperparameters (when the architecture is known), tokenizer summary, tensor table,
// parameter count and file size. As JSON for machines, or as text for people.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "io/gguf_file.h"

namespace llms {

// Never fails on a file that parsed: an unsupported architecture is reported inside
// the description ("config_error") rather than refused.
nlohmann::json describe_model_file(const GgufFile& file);
std::string format_model_description(const nlohmann::json& d);

}  // namespace llms
