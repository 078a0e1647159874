#include "serving/lora_set.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/clock.h"
#include "metrics/metrics.h"
#include "model/model.h"
#include "serving/served_name.h"

namespace llms {

Status check_lora_name(std::string_view name, std::string_view base_name) {
  if (name.empty()) return invalid_argument("an adapter needs a name (NAME=PATH)");
  LLMS_RETURN_IF_ERROR(check_served_name(name, "adapter"));
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

struct LoraSet::Metrics {
  explicit Metrics(Registry& r)
      : loads(r.counter("llmserve_lora_loads_total",
                        "LoRA adapters read from their files: at registration and when a request names an unloaded one")),
        evictions(r.counter("llmserve_lora_evictions_total",
                            "LoRA adapters unloaded to keep the resident ones under --lora-memory")),
        load_seconds(r.histogram("llmserve_lora_load_seconds", "Time to read one LoRA adapter", latency_buckets())),
        resident_bytes(r.gauge("llmserve_lora_resident_bytes", "Memory held by the resident LoRA adapters")),
        budget_bytes(r.gauge("llmserve_lora_memory_budget_bytes", "--lora-memory (0: no budget)")) {}
  Counter& loads;
  Counter& evictions;
  Histogram& load_seconds;
  Gauge& resident_bytes;
  Gauge& budget_bytes;
};

LoraSet::LoraSet(const Model& model, Registry* registry)
    : model_(model), metrics_(registry ? std::make_unique<Metrics>(*registry) : nullptr) {}

LoraSet::~LoraSet() = default;

void LoraSet::set_budget(int64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.budget_bytes = std::max<int64_t>(0, bytes);
  if (metrics_) metrics_->budget_bytes.set(static_cast<double>(stats_.budget_bytes));
}

Result<std::shared_ptr<const LoraAdapter>> LoraSet::read(const LoraSpec& spec, int64_t* load_ns) {
  const int64_t start = now_ns();
  auto loaded = LoraAdapter::load(spec.path, model_);
  if (!loaded.ok()) return loaded.status().with_context(fmt::format("adapter '{}'", spec.name));
  std::unique_ptr<LoraAdapter> named = std::move(loaded).value();
  named->set_name(spec.name);
  *load_ns = now_ns() - start;
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.loads;
  if (metrics_) {
    metrics_->loads.inc();
    metrics_->load_seconds.observe(static_cast<double>(*load_ns) * 1e-9);
  }
  const int64_t budget = stats_.budget_bytes;
  if (budget > 0 && named->bytes() > budget) {
    return invalid_argument(fmt::format("adapter '{}' needs {} bytes, more than the whole LoRA memory budget "
                                        "(--lora-memory {} bytes)",
                                        spec.name, named->bytes(), budget));
  }
  return std::shared_ptr<const LoraAdapter>(std::move(named));
}

bool LoraSet::make_room(int64_t bytes) {
  const int64_t budget = stats_.budget_bytes;
  while (budget > 0 && stats_.resident_bytes + bytes > budget) {
    Entry* victim = nullptr;
    for (auto& [name, e] : adapters_) {
      // use_count 1: only the set holds it. Copies are made from the set's under mu_
      // (held here) or from other copies, so a count of 1 cannot grow meanwhile.
      if (e.adapter && e.adapter.use_count() == 1 && (victim == nullptr || e.last_used < victim->last_used)) {
        victim = &e;
      }
    }
    if (victim == nullptr) return false;
    victim->adapter.reset();
    stats_.resident_bytes -= victim->bytes;
    ++stats_.evictions;
    if (metrics_) metrics_->evictions.inc();
  }
  return true;
}

bool LoraSet::room_possible(int64_t bytes) const {
  const int64_t budget = stats_.budget_bytes;
  if (budget <= 0) return true;
  int64_t held = 0;  // by adapters in use: what no eviction frees
  for (const auto& [name, e] : adapters_) {
    if (e.adapter && e.adapter.use_count() > 1) held += e.bytes;
  }
  return held + bytes <= budget;
}

void LoraSet::hold(Entry& e, std::shared_ptr<const LoraAdapter> adapter) {
  e.adapter = std::move(adapter);
  stats_.resident_bytes += e.bytes;
  e.last_used = ++tick_;
  if (metrics_) metrics_->resident_bytes.set(static_cast<double>(stats_.resident_bytes));
}

Status LoraSet::add(const LoraSpec& spec) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (adapters_.count(spec.name)) {
      return already_exists(fmt::format("an adapter named '{}' is already loaded", spec.name));
    }
  }
  int64_t load_ns = 0;
  LLMS_ASSIGN_OR_RETURN(std::shared_ptr<const LoraAdapter> adapter, read(spec, &load_ns));  // outside the lock
  std::lock_guard<std::mutex> lock(mu_);
  Entry entry{spec.path, nullptr, adapter->bytes(), adapter->max_rank(), 0};
  auto [it, added] = adapters_.emplace(spec.name, std::move(entry));
  if (!added) return already_exists(fmt::format("an adapter named '{}' is already loaded", spec.name));
  if (make_room(it->second.bytes)) hold(it->second, std::move(adapter));  // else registered, unloaded
  if (metrics_) metrics_->resident_bytes.set(static_cast<double>(stats_.resident_bytes));
  return ok_status();
}

Status LoraSet::no_room(std::string_view name) const {
  return resource_exhausted(fmt::format("adapter '{}' is not in memory, and the LoRA memory budget ({} bytes) is held "
                                        "by adapters that running requests use; retry when they end",
                                        name, stats_.budget_bytes));
}

Result<LoraAcquired> LoraSet::acquire(std::string_view name) {
  auto resident = [&]() -> Result<std::shared_ptr<const LoraAdapter>> {
    auto it = adapters_.find(name);
    if (it == adapters_.end()) return not_found(fmt::format("no adapter named '{}' is loaded", name));
    if (it->second.adapter) it->second.last_used = ++tick_;
    return it->second.adapter;
  };
  {
    std::lock_guard<std::mutex> lock(mu_);
    LLMS_ASSIGN_OR_RETURN(auto a, resident());
    if (a) return LoraAcquired{std::move(a), 0};
  }
  std::lock_guard<std::mutex> one_load(load_mu_);
  LoraSpec spec{std::string(name), ""};
  {
    std::lock_guard<std::mutex> lock(mu_);
    LLMS_ASSIGN_OR_RETURN(auto a, resident());  // loaded by the load before this one
    if (a) return LoraAcquired{std::move(a), 0};
    const Entry& e = adapters_.find(name)->second;
    if (!room_possible(e.bytes)) return no_room(name);  // refused before reading the file
    spec.path = e.path;
  }
  int64_t load_ns = 0;
  LLMS_ASSIGN_OR_RETURN(std::shared_ptr<const LoraAdapter> adapter, read(spec, &load_ns));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = adapters_.find(name);
  if (it == adapters_.end() || it->second.path != spec.path) {  // unloaded (and maybe loaded anew) meanwhile
    return not_found(fmt::format("no adapter named '{}' is loaded", name));
  }
  if (it->second.adapter) {  // unloaded and registered anew meanwhile, resident again
    it->second.last_used = ++tick_;
    return LoraAcquired{it->second.adapter, 0};
  }
  it->second.bytes = adapter->bytes();
  if (!make_room(it->second.bytes)) return no_room(name);
  hold(it->second, adapter);
  return LoraAcquired{std::move(adapter), load_ns};
}

Status LoraSet::remove(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = adapters_.find(name);
  if (it == adapters_.end()) return not_found(fmt::format("no adapter named '{}' is loaded", name));
  if (it->second.adapter) stats_.resident_bytes -= it->second.bytes;  // freed when its last request ends
  adapters_.erase(it);
  if (metrics_) metrics_->resident_bytes.set(static_cast<double>(stats_.resident_bytes));
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
  for (const auto& [name, e] : adapters_) out.push_back({name, e.path, e.bytes, e.max_rank, e.adapter != nullptr});
  return out;
}

size_t LoraSet::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return adapters_.size();
}

LoraMemoryStats LoraSet::memory() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace llms
