#include "base/aligned_buffer.h"

#include <sys/mman.h>

namespace llms {

void AlignedBuffer::commit() {
  if (size_ == 0) return;
#if defined(MADV_POPULATE_WRITE)
  if (madvise(data_, size_, MADV_POPULATE_WRITE) == 0) return;  // Linux 5.14 on
#endif
  std::memset(data_, 0, size_);
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
