#include "tools/llama_imatrix_dat.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "base/mapped_file.h"

namespace llms {
namespace {

// Longer names than any model's; a bigger length means this is not such a file.
constexpr int32_t kMaxNameBytes = 4096;

// A bounds-checked little-endian reader over the file's bytes.
class Cursor {
 public:
  explicit Cursor(const std::string& bytes) : bytes_(bytes) {}

  size_t left() const { return bytes_.size() - at_; }
  bool read_i32(int32_t& v) { return take(&v, 4); }
  bool read_bytes(void* out, size_t n) { return take(out, n); }

 private:
  bool take(void* out, size_t n) {
    if (left() < n) return false;
    std::memcpy(out, bytes_.data() + at_, n);
    at_ += n;
    return true;
  }
  const std::string& bytes_;
  size_t at_ = 0;
};

// One entry into `table`; `index` (from 1) and the name so far for messages.
Status read_entry(Cursor& c, int32_t index, const std::string& path, ImportanceTable& table) {
  const auto bad = [&](const std::string& name, const std::string& what) {
    return invalid_argument(fmt::format("{}: llama.cpp imatrix entry {}{}: {}", path, index,
                                        name.empty() ? std::string() : " '" + name + "'", what));
  };
  int32_t len = 0;
  if (!c.read_i32(len)) return bad("", "truncated before its name length");
  if (len <= 0 || len > kMaxNameBytes) return bad("", fmt::format("name length {} is not in 1..{}", len, kMaxNameBytes));
  std::string name(static_cast<size_t>(len), '\0');
  if (!c.read_bytes(name.data(), name.size())) return bad("", fmt::format("truncated inside its {}-byte name", len));
  int32_t ncall = 0, nval = 0;
  if (!c.read_i32(ncall) || !c.read_i32(nval)) return bad(name, "truncated before ncall and nval");
  if (ncall < 0) return bad(name, fmt::format("ncall {} is negative", ncall));
  if (nval <= 0) return bad(name, fmt::format("nval {} is not positive", nval));
  if (c.left() / 4 < static_cast<size_t>(nval)) {
    return bad(name, fmt::format("truncated: {} values need {} bytes, {} left", nval, 4 * static_cast<int64_t>(nval), c.left()));
  }
  std::vector<float> values(static_cast<size_t>(nval));
  c.read_bytes(values.data(), values.size() * 4);
  ChannelSums s;
  s.sum_sq.reserve(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i]) || values[i] < 0) return bad(name, fmt::format("value {} is {}, not a finite mean of squares", i, values[i]));
    s.sum_sq.push_back(values[i]);
  }
  s.count = ncall > 0 ? ncall : 1;  // ncall 0: llama.cpp takes the values as they are
  if (!table.tensors.emplace(name, std::move(s)).second) return bad(name, "the name appears twice");
  return ok_status();
}

// The optional chunk count and dataset name after the entries.
Status read_trailer(Cursor& c, const std::string& path, ImportanceTable& table) {
  int32_t chunks = 0;
  if (c.left() == 0) return ok_status();  // the oldest files end with the entries
  if (!c.read_i32(chunks)) return invalid_argument(fmt::format("{}: {} stray bytes after the entries", path, c.left()));
  if (chunks < 0) return invalid_argument(fmt::format("{}: chunk count {} is negative", path, chunks));
  table.chunks = chunks;
  if (c.left() == 0) return ok_status();
  int32_t len = 0;
  if (!c.read_i32(len)) return invalid_argument(fmt::format("{}: truncated dataset name length", path));
  if (len < 0 || len > kMaxNameBytes) return invalid_argument(fmt::format("{}: dataset name length {} is not in 0..{}", path, len, kMaxNameBytes));
  std::string dataset(static_cast<size_t>(len), '\0');
  if (!c.read_bytes(dataset.data(), dataset.size())) return invalid_argument(fmt::format("{}: truncated inside the {}-byte dataset name", path, len));
  if (!dataset.empty()) table.datasets.push_back(dataset);
  if (c.left() != 0) return invalid_argument(fmt::format("{}: {} stray bytes after the dataset name", path, c.left()));
  return ok_status();
}

}  // namespace

Result<ImportanceTable> read_llama_imatrix_dat(const std::string& path) {
  LLMS_ASSIGN_OR_RETURN(const std::string bytes, read_file(path));
  Cursor c(bytes);
  int32_t n_entries = 0;
  if (!c.read_i32(n_entries)) return invalid_argument(path + ": too short for an importance file (neither GGUF nor llama.cpp .dat)");
  // Each entry takes at least 16 bytes: a count beyond that is not this format.
  if (n_entries <= 0 || static_cast<size_t>(n_entries) > c.left() / 16) {
    return invalid_argument(fmt::format("{}: not an importance file: neither GGUF nor a llama.cpp .dat file ({} entries in {} bytes)",
                                        path, n_entries, bytes.size()));
  }
  ImportanceTable table;
  table.source = path;
  for (int32_t i = 1; i <= n_entries; ++i) LLMS_RETURN_IF_ERROR(read_entry(c, i, path, table));
  LLMS_RETURN_IF_ERROR(read_trailer(c, path, table));
  return table;
}

}  // namespace llms
