#include "cli/config_flags.h"

#include "cli/commands.h"
#include "server/config_file.h"

namespace llms::cli {
namespace {

// Earlier spellings of a key's flag, kept as aliases.
const std::map<std::string, std::string>& aliases() {
  static const std::map<std::string, std::string> kAliases = {
      {"model", "-m"}, {"threads", "-t"}, {"context_length", "-c,--ctx"}, {"max_running", "--parallel"}};
  return kAliases;
}

// `--no-X` flags: the key set to false.
const std::map<std::string, std::string>& negations() {
  static const std::map<std::string, std::string> kNegations = {
      {"prefix_cache", "--no-prefix-cache"}, {"warmup_pass", "--no-warmup-pass"}, {"ui", "--no-ui"}};
  return kNegations;
}

const ConfigKey& find_key(const std::string& name) {
  for (const auto& k : config_keys()) {
    if (k.name == name) return k;
  }
  fail(internal_error("no configuration key '" + name + "'"));
}

}  // namespace

ConfigFlags::ConfigFlags(CLI::App* cmd, const std::vector<std::string>& keys) {
  if (keys.empty()) {
    for (const auto& k : config_keys()) keys_.push_back(k.name);
  } else {
    keys_ = keys;
  }
  bool kv_types = false;
  for (const auto& name : keys_) {
    const ConfigKey& k = find_key(name);
    std::string names = "--" + config_flag_name(k.name);
    if (auto a = aliases().find(k.name); a != aliases().end()) names = a->second + "," + names;
    Flag& f = flags_[k.name];
    f.option = cmd->add_option(names, f.value, k.help);
    if (k.type == ConfigType::kBool) {
      f.option->expected(0, 1)->option_text("[true|false]");
    } else {
      f.option->option_text("VALUE");
    }
    // Each --review-redact adds a pattern, each --lora an adapter, each --model a model, each
    // --alias a name: the values are joined one per line.
    if (k.name == "review_redact" || k.name == "lora" || k.name == "model" || k.name == "alias") {
      f.option->multi_option_policy(CLI::MultiOptionPolicy::Join)->delimiter('\n');
    }
    if (auto n = negations().find(k.name); n != negations().end()) {
      negations_.push_back(std::make_unique<Negation>(Negation{false, k.name}));
      cmd->add_flag(n->second, negations_.back()->given, "Same as --" + config_flag_name(k.name) + " false");
    }
    if (k.name == "kv_k_type") kv_types = true;
  }
  if (kv_types) {
    cmd->add_option("--kv-type", kv_type_, "KV cache type of keys and values (f32, f16, bf16, q8_0, q4_0)");
  }
}

void ConfigFlags::apply(ServeConfig& c) const {
  auto set = [&c](const std::string& key, const std::string& value, const std::string& flag) {
    if (Status s = set_config_value(c, key, value); !s.ok()) fail(s.with_context(flag));
  };
  if (!kv_type_.empty()) {
    for (const char* key : {"kv_k_type", "kv_v_type"}) set(key, kv_type_, "--kv-type");
  }
  for (const auto& n : negations_) {
    if (n->given) set(n->key, "false", "--no-" + config_flag_name(n->key));
  }
  for (const auto& name : keys_) {
    const Flag& f = flags_.at(name);
    if (f.option->count() == 0) continue;
    const bool bare_bool = f.value.empty() && find_key(name).type == ConfigType::kBool;
    set(name, bare_bool ? "true" : f.value, "--" + config_flag_name(name));
  }
}

void add_threads_flag(CLI::App* cmd, int* threads) {
  cmd->add_option("-t,--threads", *threads, find_key("threads").help)->capture_default_str();
}

}  // namespace llms::cli
