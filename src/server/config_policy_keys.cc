// The keys of the configuration table (config_file.h) whose values are more than a
// plain number or string: a named policy (batching, autotune, speculative, deploy
// swap), a list (exit layers, precision variants and limits), or a file read into
// another key (chat_template_file).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>
#include <sstream>

#include "model/early_exit.h"
#include "server/config_keys.h"

namespace llms {

// Reads a Jinja chat template from a file into chat_template (llama-server's
// --chat-template-file); the effective config shows the source under chat_template.
ConfigKey chat_template_file_key() {
  auto set = [](ServeConfig& c, const std::string& path) -> Status {
    if (path.empty()) return ok_status();  // what --print-config writes back
    std::ifstream in(path, std::ios::binary);
    if (!in) return invalid_argument(fmt::format("cannot open chat template file '{}'", path));
    std::ostringstream ss;
    ss << in.rdbuf();
    if (ss.str().empty()) return invalid_argument(fmt::format("chat template file '{}' is empty", path));
    c.server.chat_template = ss.str();
    return ok_status();
  };
  return {"chat_template_file", ConfigType::kString,
          "Read the chat template (Jinja) from this file; it then shows as chat_template", set,
          [](const ServeConfig&) { return std::string("\"\""); }};
}

ConfigKey batching_key() {
  auto set = [](ServeConfig& c, const std::string& v) -> Status {
    auto p = parse_batching_policy(v);
    if (!p.ok()) return invalid_argument("batching: " + p.status().message());
    c.engine.batching.policy = p.value();
    return ok_status();
  };
  return {"batching", ConfigType::kString, "Scheduling policy: continuous, dynamic or none", set,
          [](const ServeConfig& c) { return toml_string(batching_policy_name(c.engine.batching.policy)); }};
}

ConfigKey autotune_key() {
  auto set = [](ServeConfig& c, const std::string& v) -> Status {
    auto m = parse_autotune_mode(v);
    if (!m.ok()) return invalid_argument("autotune: " + m.status().message());
    c.engine.slo.autotune = m.value();
    return ok_status();
  };
  return {"autotune", ConfigType::kString,
          "Hold max_batch_tokens and max_running where slo_itl_ms is met (dynamic batching: max_batch_size and "
          "max_delay_ms from the arrival rate): off, observe (report only) or on",
          set,
          [](const ServeConfig& c) { return toml_string(autotune_mode_name(c.engine.slo.autotune)); }};
}

ConfigKey speculative_key() {
  auto set = [](ServeConfig& c, const std::string& v) -> Status {
    auto m = parse_speculative_mode(v);
    if (!m.ok()) return invalid_argument("speculative: " + m.status().message());
    c.engine.speculative.mode = m.value();
    return ok_status();
  };
  return {"speculative", ConfigType::kString, "Speculative decoding: off, ngram (prompt lookup) or draft (draft_model)", set,
          [](const ServeConfig& c) { return toml_string(speculative_mode_name(c.engine.speculative.mode)); }};
}

ConfigKey exit_layers_key() {
  auto set = [](ServeConfig& c, const std::string& v) -> Status {
    if (v.empty()) {
      c.engine.early_exit.layers.clear();
      return ok_status();
    }
    auto layers = parse_exit_layers(v);
    if (!layers.ok()) return invalid_argument("exit_layers: " + layers.status().message());
    c.engine.early_exit.layers = layers.value();
    return ok_status();
  };
  return {"exit_layers", ConfigType::kString,
          "Early exit: the layers after which a greedy request's token may exit, e.g. \"4,8\" (counted from 1; "
          "empty: none)",
          set, [](const ServeConfig& c) {
            return toml_string(fmt::format("{}", fmt::join(c.engine.early_exit.layers, ",")));
          }};
}

ConfigKey precision_variants_key() {
  auto set = [](ServeConfig& c, const std::string& v) -> Status {
    c.precision.variants.clear();
    if (v.empty()) return ok_status();
    auto types = parse_precision_variants(v);
    if (!types.ok()) return invalid_argument("precision_variants: " + types.status().message());
    c.precision.variants = types.value();
    return ok_status();
  };
  return {"precision_variants", ConfigType::kString,
          "Automatic precision: the model at these types, cheapest first, made at load by quantizing its file, "
          "e.g. \"q4_k,q8_0,f16\" (empty: off)",
          set, [](const ServeConfig& c) {
            std::string out;
            for (DType t : c.precision.variants) out += (out.empty() ? "" : ",") + std::string(dtype_name(t));
            return toml_string(out);
          }};
}

ConfigKey precision_limits_key(const char* name, std::string help, std::vector<int> PrecisionPolicy::*field) {
  auto set = [name, field](ServeConfig& c, const std::string& v) -> Status {
    auto limits = parse_precision_limits(v);
    if (!limits.ok()) return invalid_argument(fmt::format("{}: {}", name, limits.status().message()));
    c.precision.policy.*field = limits.value();
    return ok_status();
  };
  return {name, ConfigType::kString, std::move(help), set,
          [field](const ServeConfig& c) {
            return toml_string(fmt::format("{}", fmt::join(c.precision.policy.*field, ",")));
          }};
}

ConfigKey swap_key() {
  auto set = [](ServeConfig& c, const std::string& v) -> Status {
    auto m = parse_swap_mode(v);
    if (!m.ok()) return m.status();
    c.deploy.swap = m.value();
    return ok_status();
  };
  return {"deploy_swap", ConfigType::kString,
          "How a deploy makes room: auto (beside when both fit, else drain), beside, drain", set,
          [](const ServeConfig& c) { return toml_string(swap_mode_name(c.deploy.swap)); }};
}

}  // namespace llms
