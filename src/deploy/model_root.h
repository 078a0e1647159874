// ModelRoot: the versions of one served model on disk, and which one serves.
//
//   DIR/versions/<name>/model.gguf   the weights of version <name>
//   DIR/versions/<name>/meta.toml    optional: notes, gate thresholds, KV types
//   DIR/versions/<name>/mark         written by the deployer: "refused" (a deploy refused it:
//                                    load, tokenizer or gate) or "killed" (its canary was
//                                    aborted), a tab, the time and the reason; prune() removes these
//   DIR/current  -> versions/<name>  the version that serves
//   DIR/previous -> versions/<name>  the one before it (rollback target)
//
// Every change is made so that a process killed at any moment (kill -9) leaves
// `current` naming a complete version:
//  - a version is copied into versions/.incoming-<name>-<pid>/ and then renamed to
//    versions/<name> (rename(2) of a directory is atomic), so versions/<name> exists
//    only complete; leftovers of an interrupted copy are removed by the next install;
//  - a link is switched by making a fresh link beside it and renaming it over the old
//    one (atomic as well). `previous` is switched before `current`: a crash between the
//    two leaves the old current serving, with previous already pointing to it.
//
// Thread-safety: none; one deploy at a time per root (the server and the CLI each
// serialize their own). Reads of the links are safe against concurrent switches.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace llms {

// INVALID_ARGUMENT unless `name` is 1-100 characters of [A-Za-z0-9._-], not "." or
// "..", and does not start with '.' (hidden names are the root's own).
Status check_version_name(const std::string& name);

struct VersionInfo {
  std::string name;
  bool current = false;
  bool previous = false;
  int64_t model_bytes = 0;
  std::string mark;         // "", "refused" or "killed"
  std::string mark_reason;  // the time and why
};

class ModelRoot {
 public:
  // Opens DIR (made, with versions/, when `create` is set); NOT_FOUND otherwise.
  static Result<ModelRoot> open(const std::string& dir, bool create);

  const std::string& dir() const { return dir_; }
  std::string version_dir(const std::string& name) const;
  std::string model_path(const std::string& name) const;  // .../model.gguf
  std::string meta_path(const std::string& name) const;   // .../meta.toml

  // The versions present, by name.
  std::vector<VersionInfo> versions() const;
  bool has_version(const std::string& name) const;
  // The link targets; nullopt when the link is absent or does not name a version.
  std::optional<std::string> current() const;
  std::optional<std::string> previous() const;

  // Copies (or hard-links / symlinks when `link`) `from` as version `name`, with an
  // optional meta.toml copied beside it. ALREADY_EXISTS when the version exists.
  Status install(const std::string& name, const std::string& from, bool link, const std::string& meta_from = "");
  // Makes `name` current and the old current previous.
  Status switch_to(const std::string& name);
  // Makes previous current and current previous. FAILED_PRECONDITION without a previous.
  Status rollback();

  // Marks version `name` "refused" or "killed" with `reason` (the file `mark`, replaced
  // atomically). NOT_FOUND when there is no such version.
  Status mark(const std::string& name, const std::string& mark, const std::string& reason);
  // Removes every marked version that is neither current nor previous; returns their names.
  Result<std::vector<std::string>> prune();

 private:
  explicit ModelRoot(std::string dir) : dir_(std::move(dir)) {}
  std::optional<std::string> link_target(const char* link) const;
  Status set_link(const char* link, const std::string& name);

  std::string dir_;
};

// Test hook: when the environment variable LLMSERVE_DEPLOY_CRASH_AT names one of the
// steps of install()/switch_to() ("copy", "copied", "link", "previous"), the process
// kills itself (SIGKILL) there, so tests can check every crash point.
void deploy_crash_point(const char* step);

}  // namespace llms
