#include "kernels/panel_memory.h"

#include <cstring>
#include <mutex>

namespace llms {
namespace {

// Small matrices share chunks of this size; larger ones get a chunk of their own.
constexpr int64_t kChunkBytes = int64_t{64} << 20;
constexpr int64_t kOwnChunkFrom = kChunkBytes / 4;

struct Carver {
  std::mutex mu;
  std::weak_ptr<AlignedBuffer> chunk;  // the chunk being carved, while anyone holds it
  int64_t used = 0;
};

Carver& carver() {
  static Carver c;
  return c;
}

}  // namespace

PanelMemory PanelMemory::allocate(int64_t bytes) {
  bytes = (bytes + 63) / 64 * 64;
  PanelMemory m;
  if (bytes >= kOwnChunkFrom) {
    m.chunk_ = std::make_shared<AlignedBuffer>(AlignedBuffer::huge(static_cast<size_t>(bytes), /*zero=*/false));
    m.data_ = m.chunk_->as<uint8_t>();
  } else {
    Carver& c = carver();
    std::lock_guard lock(c.mu);
    m.chunk_ = c.chunk.lock();
    if (m.chunk_ == nullptr || c.used + bytes > kChunkBytes) {
      m.chunk_ = std::make_shared<AlignedBuffer>(AlignedBuffer::huge(static_cast<size_t>(kChunkBytes), /*zero=*/false));
      c.chunk = m.chunk_;
      c.used = 0;
    }
    m.data_ = m.chunk_->as<uint8_t>() + c.used;
    c.used += bytes;
  }
  std::memset(m.data_, 0, static_cast<size_t>(bytes));
  return m;
}

}  // namespace llms
