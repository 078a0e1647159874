#include "server/server_config.h"

#include <fmt/format.h>

#include <filesystem>

#include "base/log.h"

namespace llms {

Status ServerConfig::validate() const {
  auto bad = [](const char* key, const std::string& why) { return invalid_argument(fmt::format("{}: {}", key, why)); };
  if (model_path.empty() == model_root.empty()) {
    return bad("model", "give a GGUF model file (-m MODEL.gguf) or a model root (--model-root DIR), not both");
  }
  if (host.empty()) return bad("host", "must not be empty");
  if (port < 0 || port > 65535) return bad("port", fmt::format("{} is not in 0..65535", port));
  if (io_threads < 1 || io_threads > 256) return bad("io_threads", fmt::format("{} is not in 1..256", io_threads));
  if (max_body_bytes < 1024) return bad("max_body_bytes", "must be >= 1024");
  if (!(idle_timeout_s > 0)) return bad("idle_timeout", "must be > 0");
  if (!(header_timeout_s > 0)) return bad("header_timeout", "must be > 0");
  if (!(body_timeout_s > 0)) return bad("body_timeout", "must be > 0");
  if (!(stream_stall_timeout_s > 0)) return bad("stream_stall_timeout", "must be > 0");
  if (stream_buffer_bytes < 4096 || stream_buffer_bytes > (64 << 20)) {
    return bad("stream_buffer_bytes", fmt::format("{} is not in 4096..67108864 (4 KiB..64 MiB)", stream_buffer_bytes));
  }
  if (max_connections < 1) return bad("max_connections", "must be >= 1");
  if (max_connections_per_client < 0) return bad("max_connections_per_client", "must be >= 0 (0: no cap)");
  if (prefix_hash != "xxh3" && prefix_hash != "sha256-cbor") {
    return bad("prefix_hash", "must be xxh3 or sha256-cbor, not \"" + prefix_hash + "\"");
  }
  if (metrics_compat != "vllm" && metrics_compat != "none") {
    return bad("metrics_compat", "must be vllm or none, not \"" + metrics_compat + "\"");
  }
  if (protect_metrics && api_key.empty() && api_key_file.empty()) {
    return bad("protect_metrics", "needs an API key (api_key or api_key_file)");
  }
  if (!log_level.empty() && !parse_log_level(log_level)) {
    return bad("log_level", "must be debug, info, warn, error or off, not \"" + log_level + "\"");
  }
  if (!parse_log_format(log_format)) return bad("log_format", "must be text or json, not \"" + log_format + "\"");
  if (!(shutdown_timeout_s >= 0)) return bad("shutdown_timeout", "must be >= 0");
  if (!(shutdown_delay_s >= 0 && shutdown_delay_s <= 3600)) return bad("shutdown_delay", "must be between 0 and 3600 seconds");
  return ok_status();
}

Status ServeConfig::validate() const {
  LLMS_RETURN_IF_ERROR(server.validate());
  LLMS_RETURN_IF_ERROR(engine.validate());
  LLMS_RETURN_IF_ERROR(precision.validate());
  auto bad = [](const char* key, const std::string& why) { return invalid_argument(fmt::format("{}: {}", key, why)); };
  const GateConfig& g = deploy.gate;
  if (!(g.max_kl >= 0)) return bad("gate_max_kl", "must be >= 0");
  if (!(g.min_top1 >= 0 && g.min_top1 <= 1)) return bad("gate_min_top1", "must be in [0, 1]");
  if (!(deploy.quality_interval_s >= 0)) return bad("quality_interval", "must be >= 0 seconds (0: off)");
  return ok_status();
}

std::string served_model_name(const ServerConfig& c) {
  if (!c.model_name.empty()) return c.model_name;
  if (!c.model_root.empty()) {
    std::filesystem::path root(c.model_root);
    return (root.has_filename() ? root : root.parent_path()).filename().string();
  }
  std::filesystem::path p(c.model_path);
  if (p.extension() == ".gguf") return p.stem().string();
  return p.filename().string();
}

}  // namespace llms
