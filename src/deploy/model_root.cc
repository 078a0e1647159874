#include "deploy/model_root.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "base/log.h"

namespace llms {
namespace fs = std::filesystem;

namespace {

constexpr const char* kIncoming = ".incoming-";
constexpr const char* kMarkFile = "mark";

// The version's mark file, when it has one: "refused|killed<TAB>time reason".
void read_mark(const std::string& version_dir, VersionInfo* v) {
  std::ifstream in(version_dir + "/" + kMarkFile);
  std::string line;
  if (!in || !std::getline(in, line)) return;
  const size_t tab = line.find('\t');
  v->mark = line.substr(0, tab);
  if (tab != std::string::npos) v->mark_reason = line.substr(tab + 1);
}

Status io_error(const std::string& what, const std::string& path) {
  return internal_error(fmt::format("{} {}: {}", what, path, std::strerror(errno)));
}

// Copies `from` to `to` (created), fsyncs it; the "copy" crash point fires midway.
Status copy_file(const std::string& from, const std::string& to) {
  const int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return not_found(fmt::format("cannot open {}: {}", from, std::strerror(errno)));
  const int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (out < 0) {
    ::close(in);
    return io_error("cannot create", to);
  }
  std::vector<char> buf(1 << 20);
  Status st = ok_status();
  bool first = true;
  for (;;) {
    const ssize_t n = ::read(in, buf.data(), buf.size());
    if (n < 0) {
      st = io_error("cannot read", from);
      break;
    }
    if (n == 0) break;
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = ::write(out, buf.data() + done, static_cast<size_t>(n - done));
      if (w < 0) {
        st = io_error("cannot write", to);
        break;
      }
      done += w;
    }
    if (!st.ok()) break;
    if (first) deploy_crash_point("copy");
    first = false;
  }
  if (st.ok() && ::fsync(out) != 0) st = io_error("cannot sync", to);
  ::close(in);
  ::close(out);
  return st;
}

// Puts `from` at `to`: a hard link where both sit on one file system, else a
// symbolic link to the absolute path.
Status link_file(const std::string& from, const std::string& to) {
  if (::link(from.c_str(), to.c_str()) == 0) return ok_status();
  std::error_code ec;
  const fs::path abs = fs::absolute(from, ec);
  if (ec || ::symlink(abs.c_str(), to.c_str()) != 0) return io_error("cannot link", to);
  return ok_status();
}

void sync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

void deploy_crash_point(const char* step) {
  const char* at = std::getenv("LLMSERVE_DEPLOY_CRASH_AT");
  if (at != nullptr && std::strcmp(at, step) == 0) ::kill(::getpid(), SIGKILL);
}

Status check_version_name(const std::string& name) {
  const bool ok_chars = std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
  });
  if (name.empty() || name.size() > 100 || !ok_chars || name.front() == '.') {
    return invalid_argument(fmt::format(
        "version name '{}' is not allowed: use 1-100 of A-Z a-z 0-9 . _ -, not starting with '.'", name));
  }
  return ok_status();
}

Result<ModelRoot> ModelRoot::open(const std::string& dir, bool create) {
  std::error_code ec;
  if (create) {
    fs::create_directories(fs::path(dir) / "versions", ec);
    if (ec) return internal_error(fmt::format("cannot create model root {}: {}", dir, ec.message()));
  }
  if (!fs::is_directory(fs::path(dir) / "versions", ec)) {
    return not_found(fmt::format("{} is not a model root (no versions/ folder)", dir));
  }
  return ModelRoot(dir);
}

std::string ModelRoot::version_dir(const std::string& name) const { return dir_ + "/versions/" + name; }
std::string ModelRoot::model_path(const std::string& name) const { return version_dir(name) + "/model.gguf"; }
std::string ModelRoot::meta_path(const std::string& name) const { return version_dir(name) + "/meta.toml"; }

bool ModelRoot::has_version(const std::string& name) const {
  std::error_code ec;
  return check_version_name(name).ok() && fs::exists(model_path(name), ec);
}

std::optional<std::string> ModelRoot::link_target(const char* link) const {
  std::error_code ec;
  const fs::path target = fs::read_symlink(fs::path(dir_) / link, ec);
  if (ec) return std::nullopt;
  const std::string t = target.string();
  const std::string prefix = "versions/";
  if (t.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  const std::string name = t.substr(prefix.size());
  if (!has_version(name)) return std::nullopt;
  return name;
}

std::optional<std::string> ModelRoot::current() const { return link_target("current"); }
std::optional<std::string> ModelRoot::previous() const { return link_target("previous"); }

std::vector<VersionInfo> ModelRoot::versions() const {
  std::vector<VersionInfo> out;
  const auto cur = current(), prev = previous();
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(dir_) / "versions", ec)) {
    const std::string name = e.path().filename().string();
    if (!has_version(name)) continue;
    VersionInfo v;
    v.name = name;
    v.current = cur && *cur == name;
    v.previous = prev && *prev == name;
    std::error_code size_ec;
    v.model_bytes = static_cast<int64_t>(fs::file_size(model_path(name), size_ec));
    read_mark(version_dir(name), &v);
    out.push_back(std::move(v));
  }
  std::sort(out.begin(), out.end(), [](const VersionInfo& a, const VersionInfo& b) { return a.name < b.name; });
  return out;
}

Status ModelRoot::mark(const std::string& name, const std::string& mark, const std::string& reason) {
  if (!has_version(name)) return not_found(fmt::format("no version '{}' in {}", name, dir_));
  const std::string path = version_dir(name) + "/" + kMarkFile;
  const std::string tmp = path + fmt::format(".tmp-{}", ::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << mark << '\t' << iso8601(std::chrono::system_clock::now()) << ' ' << reason << '\n';
    if (!out.flush()) return io_error("cannot write", tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) return io_error("cannot rename to", path);
  return ok_status();
}

Result<std::vector<std::string>> ModelRoot::prune() {
  std::vector<std::string> removed;
  for (const VersionInfo& v : versions()) {
    if (v.mark.empty() || v.current || v.previous) continue;
    std::error_code ec;
    fs::remove_all(version_dir(v.name), ec);
    if (ec) return internal_error(fmt::format("cannot remove {}: {}", version_dir(v.name), ec.message()));
    removed.push_back(v.name);
  }
  return removed;
}

Status ModelRoot::install(const std::string& name, const std::string& from, bool link, const std::string& meta_from) {
  LLMS_RETURN_IF_ERROR(check_version_name(name));
  std::error_code ec;
  if (fs::exists(version_dir(name), ec)) return already_exists(fmt::format("version '{}' exists in {}", name, dir_));
  if (!fs::is_regular_file(from, ec)) return not_found(fmt::format("{} is not a file", from));
  // What an interrupted install left behind (one deploy at a time per root).
  for (const auto& e : fs::directory_iterator(fs::path(dir_) / "versions", ec)) {
    if (e.path().filename().string().rfind(kIncoming, 0) == 0) fs::remove_all(e.path(), ec);
  }
  const std::string incoming = fmt::format("{}/versions/{}{}-{}", dir_, kIncoming, name, ::getpid());
  if (!fs::create_directory(incoming, ec)) return internal_error(fmt::format("cannot create {}: {}", incoming, ec.message()));
  Status st = link ? link_file(from, incoming + "/model.gguf") : copy_file(from, incoming + "/model.gguf");
  if (st.ok() && !meta_from.empty()) st = copy_file(meta_from, incoming + "/meta.toml");
  if (!st.ok()) {
    fs::remove_all(incoming, ec);
    return st;
  }
  sync_dir(incoming);
  deploy_crash_point("copied");
  if (::rename(incoming.c_str(), version_dir(name).c_str()) != 0) {
    st = io_error("cannot rename into", version_dir(name));
    fs::remove_all(incoming, ec);
    return st;
  }
  sync_dir(dir_ + "/versions");
  return ok_status();
}

Status ModelRoot::set_link(const char* link, const std::string& name) {
  const std::string tmp = fmt::format("{}/.{}.tmp-{}", dir_, link, ::getpid());
  ::unlink(tmp.c_str());
  if (::symlink(("versions/" + name).c_str(), tmp.c_str()) != 0) return io_error("cannot make link", tmp);
  deploy_crash_point("link");
  const std::string path = dir_ + "/" + link;
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const Status st = io_error("cannot switch", path);
    ::unlink(tmp.c_str());
    return st;
  }
  sync_dir(dir_);
  return ok_status();
}

Status ModelRoot::switch_to(const std::string& name) {
  if (!has_version(name)) return not_found(fmt::format("no version '{}' in {}", name, dir_));
  const auto cur = current();
  if (cur && *cur == name) return ok_status();
  if (cur) {
    LLMS_RETURN_IF_ERROR(set_link("previous", *cur));
    deploy_crash_point("previous");
  }
  return set_link("current", name);
}

Status ModelRoot::rollback() {
  const auto cur = current(), prev = previous();
  if (!prev) return failed_precondition(fmt::format("{} has no previous version to roll back to", dir_));
  if (cur) LLMS_RETURN_IF_ERROR(set_link("previous", *cur));
  return set_link("current", *prev);
}

}  // namespace llms
