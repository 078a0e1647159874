// The models one server serves, read from its configuration: the `model` key (one
// per line; each --model flag a line, PATH or NAME=PATH), `models_dir` (each GGUF file
// or Hugging Face model directory in it, named after the file or directory) and
// `alias` (NAME=ALIAS lines: model NAME also answers to ALIAS). The first model is the
// default: the one a request without `model` gets, and the one a model root's deploys
// change. A lone `-m PATH` is one model named as it always was (model_name, else the
// file name without .gguf).
//
// A line is a path when it names a file or directory that exists (so a file whose
// name holds '=' still serves as before), else NAME=PATH.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "server/server_config.h"

namespace llms {

struct ModelEntry {
  std::string name;                  // what a request's `model` says
  std::string path;                  // the GGUF file or model directory; "" for a model root's
  std::vector<std::string> aliases;  // other names requests may use
};

// The served models, the default first. INVALID_ARGUMENT naming the entry for a bad
// name, a name or alias given twice, an alias of a model that is not served, a
// models_dir that cannot be read or holds no model, or model_name where it names no
// single file.
Result<std::vector<ModelEntry>> list_models(const ServerConfig& c);

// Whether `c` asks for more than one model (several `model` lines, or models_dir):
// what tensor parallelism, model roots and KV events refuse.
bool serves_several_models(const ServerConfig& c);

// The rule for a model name or alias (also a metric label's value): not empty, at most
// 128 letters, digits and . _ - : / @ +.
Status check_model_name(std::string_view name);

}  // namespace llms
