// AlignedBuffer owns a block of 64-byte aligned bytes (cache line and AVX-512 width).
// Used for activations, KV blocks and repacked weights. Move-only.
// huge() makes a buffer for data streamed from memory (weights, the KV cache): 2 MiB
// aligned and rounded, and asking the kernel for huge pages before the first touch,
// which spares the TLB and lets the hardware prefetchers run past 4 KiB boundaries.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace llms {

class AlignedBuffer {
 public:
  static constexpr size_t kAlignment = 64;

  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes, bool zero = true) { resize(bytes, zero); }
  ~AlignedBuffer() { std::free(data_); }
  AlignedBuffer(AlignedBuffer&& o) noexcept : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept {
    if (this != &o) {
      std::free(data_);
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  // Discards the old contents.
  void resize(size_t bytes, bool zero = true) { allocate(bytes, kAlignment, zero); }

  static constexpr size_t kHugePage = size_t{2} << 20;
  static AlignedBuffer huge(size_t bytes, bool zero = true) {
    AlignedBuffer b;
    b.allocate(bytes, kHugePage, zero);
    return b;
  }

  // Has the kernel commit every page now (zeroed, as on a first touch), so that no
  // later first write faults: one madvise where the kernel can, else a write of zeros.
  void commit();

  // Gives the whole pages inside [offset, offset + bytes) back to the kernel
  // (MADV_DONTNEED): they read as zeros afterwards and are committed again when next
  // written. Returns the bytes given back (0 where the range holds no whole page).
  int64_t discard(size_t offset, size_t bytes);

  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  template <typename T>
  T* as() { return reinterpret_cast<T*>(data_); }
  template <typename T>
  const T* as() const { return reinterpret_cast<const T*>(data_); }

 private:
  void allocate(size_t bytes, size_t alignment, bool zero) {
    std::free(data_);
    data_ = nullptr;
    size_ = bytes;
    if (bytes == 0) return;
    const size_t rounded = (bytes + alignment - 1) / alignment * alignment;
    data_ = static_cast<std::byte*>(std::aligned_alloc(alignment, rounded));
    if (data_ == nullptr) throw std::bad_alloc();
    if (alignment == kHugePage) advise_huge_pages(data_, rounded);
    if (zero) std::memset(data_, 0, rounded);
  }
  static void advise_huge_pages(void* p, size_t bytes);

  std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace llms
