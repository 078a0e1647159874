#include "serving/lora_set.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "model/model.h"

namespace llms {

Status check_lora_name(std::string_view name, std::string_view base_name) {
  if (name.empty()) return invalid_argument("an adapter needs a name (NAME=PATH)");
  // A name is a metric label and an item of vLLM's comma-separated adapter lists.
  const bool plain = name.size() <= 128 && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("._-:/@+").find(c) != std::string_view::npos;
  });
  if (!plain) {
    return invalid_argument(fmt::format("adapter name '{}': use at most 128 letters, digits and . _ - : / @ +",
                                        name.substr(0, 128)));
  }
  if (name == base_name) {
    return invalid_argument(
        fmt::format("adapter name '{}' is the base model's name; a request naming it gets the base model", name));
  }
  return ok_status();
}

Result<std::vector<LoraSpec>> parse_lora_specs(std::string_view specs, std::string_view base_name) {
  std::vector<LoraSpec> out;
  size_t begin = 0;
  while (begin <= specs.size()) {
    size_t end = specs.find('\n', begin);
    if (end == std::string_view::npos) end = specs.size();
    const std::string_view line = specs.substr(begin, end - begin);
    begin = end + 1;
    if (line.empty()) continue;
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      return invalid_argument(fmt::format("lora: '{}' is not NAME=PATH", line));
    }
    LoraSpec s{std::string(line.substr(0, eq)), std::string(line.substr(eq + 1))};
    if (Status st = check_lora_name(s.name, base_name); !st.ok()) return st.with_context("lora '" + std::string(line) + "'");
    if (s.path.empty()) return invalid_argument(fmt::format("lora '{}': the path is empty (NAME=PATH)", line));
    if (std::any_of(out.begin(), out.end(), [&](const LoraSpec& o) { return o.name == s.name; })) {
      return invalid_argument(fmt::format("lora: the name '{}' is given twice", s.name));
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<LoraSpec> LoraCatalog::list() const {
  std::lock_guard<std::mutex> lock(mu_);
  return specs_;
}

std::optional<LoraSpec> LoraCatalog::find(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const LoraSpec& s : specs_) {
    if (s.name == name) return s;
  }
  return std::nullopt;
}

Status LoraCatalog::add(LoraSpec spec) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const LoraSpec& s : specs_) {
    if (s.name == spec.name) return already_exists(fmt::format("an adapter named '{}' is already loaded", spec.name));
  }
  specs_.push_back(std::move(spec));
  return ok_status();
}

Status LoraCatalog::remove(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find_if(specs_.begin(), specs_.end(), [&](const LoraSpec& s) { return s.name == name; });
  if (it == specs_.end()) return not_found(fmt::format("no adapter named '{}' is loaded", name));
  specs_.erase(it);
  return ok_status();
}

Status LoraSet::add(const LoraSpec& spec) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (adapters_.count(spec.name)) {
      return already_exists(fmt::format("an adapter named '{}' is already loaded", spec.name));
    }
  }
  auto loaded = LoraAdapter::load(spec.path, model_);  // outside the lock: it reads files
  if (!loaded.ok()) return loaded.status().with_context(fmt::format("adapter '{}'", spec.name));
  std::unique_ptr<LoraAdapter> named = std::move(loaded).value();
  named->set_name(spec.name);
  std::shared_ptr<const LoraAdapter> adapter = std::move(named);
  std::lock_guard<std::mutex> lock(mu_);
  if (!adapters_.emplace(spec.name, Entry{spec.path, std::move(adapter)}).second) {
    return already_exists(fmt::format("an adapter named '{}' is already loaded", spec.name));
  }
  return ok_status();
}

Status LoraSet::remove(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = adapters_.find(name);
  if (it == adapters_.end()) return not_found(fmt::format("no adapter named '{}' is loaded", name));
  adapters_.erase(it);
  return ok_status();
}

std::shared_ptr<const LoraAdapter> LoraSet::find(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = adapters_.find(name);
  return it == adapters_.end() ? nullptr : it->second.adapter;
}

std::vector<LoraInfo> LoraSet::list() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<LoraInfo> out;
  for (const auto& [name, e] : adapters_) out.push_back({name, e.path, e.adapter->bytes(), e.adapter->max_rank()});
  return out;
}

size_t LoraSet::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return adapters_.size();
}

}  // namespace llms
