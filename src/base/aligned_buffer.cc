#include "base/aligned_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

namespace llms {

void AlignedBuffer::commit() {
  if (size_ == 0) return;
#if defined(MADV_POPULATE_WRITE)
  if (madvise(data_, size_, MADV_POPULATE_WRITE) == 0) return;  // Linux 5.14 on
#endif
  std::memset(data_, 0, size_);
}

int64_t AlignedBuffer::discard(size_t offset, size_t bytes) {
  if (offset >= size_) return 0;
  bytes = std::min(bytes, size_ - offset);
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<uintptr_t>(data_) + offset + page - 1) / page * page;
  const auto end = (reinterpret_cast<uintptr_t>(data_) + offset + bytes) / page * page;
  if (end <= begin) return 0;
  if (madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED) != 0) return 0;
  return static_cast<int64_t>(end - begin);
}

// The advice may be ignored (transparent huge pages off); that is harmless.
void AlignedBuffer::advise_huge_pages(void* p, size_t bytes) {
#if defined(MADV_HUGEPAGE)
  madvise(p, bytes, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

}  // namespace llms
