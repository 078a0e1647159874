#include "base/aligned_buffer.h"

#include <sys/mman.h>

namespace llms {

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
