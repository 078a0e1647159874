// MappedFile: a read-only memory map of a whole file (model weights are never copied).
// Move-only; the mapping lives as long as the object.
//
// The mapping is private and never written, so its pages are the page cache's clean
// pages: release() may drop this process's view of any of them (they then stop
// counting in its resident memory) and a later read simply maps them again.
//
// Thread-safety: reads from any thread; release() too (it never changes contents).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "base/status.h"

namespace llms {

class MappedFile {
 public:
  MappedFile() = default;
  ~MappedFile();
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // Errors: NOT_FOUND if the file cannot be opened, INVALID_ARGUMENT for a directory.
  static Result<MappedFile> open(const std::string& path);

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

  // Drops the pages spanning bytes [offset, offset + length) of the file (rounded out to
  // whole pages) from this process's resident memory: for data that was copied out
  // (repacked weights, parsed metadata) and will be read rarely or never again.
  // Contents are unchanged; a later read faults the pages back in.
  void release(uint64_t offset, uint64_t length) const;
  // Bytes of the mapping resident in this process now (its Rss in /proc/self/smaps),
  // or -1 when that cannot be read. Reads a /proc file: for start-up and tests.
  int64_t resident_bytes() const;

 private:
  void reset();
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

// Reads a whole file into a string (small files: configs, prompts, texts).
Result<std::string> read_file(const std::string& path);

}  // namespace llms
