// The LoRA adapters a server serves (model/lora.h): LoraCatalog, the server's list of
// names and paths (from --lora, and loaded or unloaded at run time), and LoraSet, one
// served model's adapters, each loaded from its path and bound to that model's
// weights. A request names an adapter as its model (`"model": "NAME"`); the version
// it runs on hands it the adapter by pointer, shared, so that an adapter unloaded
// while a request runs stays alive until that request ends. Under a memory budget
// (--lora-memory) a LoraSet drops unused adapters' factors and loads them again when
// a request names them.
//
// Thread-safety: both classes are safe to call from any thread (their own mutexes).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/lora.h"

namespace llms {

class Model;
class Registry;

struct LoraSpec {
  std::string name;  // what a request's `model` says
  std::string path;  // a GGUF adapter or a PEFT directory
};

// `specs`: NAME=PATH entries, one per line (the `lora` config key, each --lora flag a
// line). INVALID_ARGUMENT naming the entry for a line without '=', an empty name or
// path, a name twice, or the base model's own name.
Result<std::vector<LoraSpec>> parse_lora_specs(std::string_view specs, std::string_view base_name);
// The rule for one adapter name next to the base model's (also for run-time loads):
// not empty, at most 128 letters, digits and . _ - : / @ +, not the base's name.
Status check_lora_name(std::string_view name, std::string_view base_name);

class LoraCatalog {
 public:
  explicit LoraCatalog(std::vector<LoraSpec> specs = {}) : specs_(std::move(specs)) {}
  std::vector<LoraSpec> list() const;
  std::optional<LoraSpec> find(std::string_view name) const;
  // ALREADY_EXISTS when the name is taken.
  Status add(LoraSpec spec);
  // NOT_FOUND when no adapter has that name.
  Status remove(std::string_view name);

 private:
  mutable std::mutex mu_;
  std::vector<LoraSpec> specs_;
};

// What a registered adapter is, for listings.
struct LoraInfo {
  std::string name, path;
  int64_t bytes = 0;
  int64_t max_rank = 0;
  bool resident = false;  // its factors are in memory (else loaded again when a request names it)
};

// What the memory budget has done so far.
struct LoraMemoryStats {
  int64_t budget_bytes = 0;    // 0: no budget
  int64_t resident_bytes = 0;  // of the adapters the set holds (never above the budget)
  int64_t loads = 0;           // reads of an adapter's files: registrations and loads on demand
  int64_t evictions = 0;       // adapters unloaded to make room
};

// An adapter as a request gets it: `load_ns` is how long it took to load it again
// (0 when it was resident), time the request waited for it.
struct LoraAcquired {
  std::shared_ptr<const LoraAdapter> adapter;
  int64_t load_ns = 0;
};

// The adapters bound to one served model, held under a memory budget
// (--lora-memory): an adapter stays registered (its name and path) from add() to
// remove(), but its factors are resident only while room allows. Making room unloads
// the least recently used adapter that no request holds (a running or waiting request
// holds its adapter by pointer, so an adapter in use is never unloaded); acquire()
// loads an unloaded one again. An adapter bigger than the whole budget is refused at
// registration.
class LoraSet {
 public:
  // `model` outlives the set. With a registry (it must outlive the set) the set counts
  // its loads, evictions, load time and resident bytes there (docs/metrics.md).
  explicit LoraSet(const Model& model, Registry* registry = nullptr);
  ~LoraSet();

  // 0: no budget (every adapter stays resident). Set before adapters are added.
  void set_budget(int64_t bytes);

  // Loads `spec.path` against the model (LoraAdapter::load's errors, with the name);
  // ALREADY_EXISTS when the name is taken; INVALID_ARGUMENT when the adapter alone is
  // bigger than the budget. It stays resident when room can be made, else it is
  // registered unloaded (every resident adapter is in use).
  Status add(const LoraSpec& spec);
  // NOT_FOUND when no adapter has that name. Requests running with it keep it.
  Status remove(std::string_view name);
  // The adapter for a request, loaded again from its path when it was unloaded (at
  // most one load at a time), and marked most recently used. NOT_FOUND when no
  // adapter has that name; RESOURCE_EXHAUSTED when the budget is held by adapters that
  // requests are using (retry when they end); the file's errors when it cannot be
  // read any more.
  Result<LoraAcquired> acquire(std::string_view name);
  // The resident adapter of that name; null when none or unloaded. Loads nothing.
  std::shared_ptr<const LoraAdapter> find(std::string_view name) const;
  std::vector<LoraInfo> list() const;
  size_t size() const;
  LoraMemoryStats memory() const;

 private:
  struct Entry {
    std::string path;
    std::shared_ptr<const LoraAdapter> adapter;  // null: unloaded
    int64_t bytes = 0;
    int64_t max_rank = 0;
    uint64_t last_used = 0;
  };
  struct Metrics;
  Result<std::shared_ptr<const LoraAdapter>> read(const LoraSpec& spec, int64_t* load_ns);
  // Unloads unused adapters, least recently used first, until `bytes` more fit; false
  // when they cannot. Under mu_.
  bool make_room(int64_t bytes);
  // Whether make_room(bytes) would succeed. Under mu_.
  bool room_possible(int64_t bytes) const;
  // RESOURCE_EXHAUSTED for `name`: every resident adapter is in use. Under mu_.
  Status no_room(std::string_view name) const;
  // Holds `adapter` in `e` (room made). Under mu_.
  void hold(Entry& e, std::shared_ptr<const LoraAdapter> adapter);

  const Model& model_;
  std::unique_ptr<Metrics> metrics_;
  std::mutex load_mu_;  // one load on demand at a time (so one adapter is not read twice)
  mutable std::mutex mu_;
  std::map<std::string, Entry, std::less<>> adapters_;
  LoraMemoryStats stats_;
  uint64_t tick_ = 0;
};

}  // namespace llms
