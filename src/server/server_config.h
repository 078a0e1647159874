// ServeConfig: everything `llmserve serve` can be told — the server's own settings
// (ServerConfig) and the engine's (EngineConfig). Plain values with defaults; every
// field is a key of the TOML config file and a command-line flag (config_file.h).
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "deploy/deployer.h"
#include "engine/engine_config.h"

namespace llms {

struct ServerConfig {
  std::string model_path;            // the GGUF file to serve, or:
  std::string model_root;            // a model root (deploy/model_root.h): serves its `current` version
  std::string admin_token_file;      // the admin API's bearer token; "" = admin API off
  std::string model_name;            // the id clients use; "" = the file name without .gguf
  std::string host = "127.0.0.1";
  int port = 8080;                   // 0: any free port (printed at start)
  int io_threads = 2;                // HTTP I/O threads (connections are multiplexed)
  int64_t max_body_bytes = 8 << 20;  // larger request bodies get 413
  double idle_timeout_s = 60;        // a keep-alive connection may wait this long for a request
  double shutdown_timeout_s = 30;    // SIGTERM: in-flight requests get this long to finish
  std::string chat_template;         // "" = the model's (or "plain" when it has none), a name, or "plain"

  Status validate() const;
};

struct ServeConfig {
  ServerConfig server;
  EngineConfig engine;
  DeployConfig deploy;  // its engine, chat_template and threads are filled from the above at start
  Status validate() const;
};

// The served model id: model_name, else the file name without directory and .gguf
// (the model root's folder name with --model-root).
std::string served_model_name(const ServerConfig& c);

}  // namespace llms
