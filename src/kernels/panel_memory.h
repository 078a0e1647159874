// PanelMemory: where repacked weights live. Decode streams every weight from memory
// at each token, so panels are carved out of large chunks of huge pages
// (AlignedBuffer::huge()) instead of one allocation per matrix: a model's many small
// and odd-sized matrices (K and V projections of a few hundred KiB, 2.3 MiB ones)
// would otherwise sit partly on 4 KiB pages, where the TLB misses and the hardware
// prefetchers stop at every page boundary.
//
// A chunk is freed when the last PanelMemory carved from it is, so unloading a model
// returns its memory, except for a part of the one chunk the next model loaded may have
// continued (at most one chunk, freed with that model). Chunk bytes past the last
// allocation are never touched, so they cost address space, not memory.
//
// Thread-safety: allocate() may be called from any thread; a PanelMemory is
// immutable once filled and shared like the PackedWeights that holds it.
#pragma once

#include <cstdint>
#include <memory>

#include "base/aligned_buffer.h"

namespace llms {

class PanelMemory {
 public:
  PanelMemory() = default;
  // `bytes` zeroed bytes, 64-byte aligned.
  static PanelMemory allocate(int64_t bytes);

  uint8_t* data() const { return data_; }

 private:
  std::shared_ptr<AlignedBuffer> chunk_;
  uint8_t* data_ = nullptr;
};

}  // namespace llms
