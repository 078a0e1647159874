#include "base/aligned_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace llms {
namespace {

TEST(AlignedBufferTest, PlainBuffersAreCacheLineAlignedAndZeroed) {
  AlignedBuffer b(1000);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % AlignedBuffer::kAlignment, 0u);
  EXPECT_EQ(b.size(), 1000u);
  for (size_t i = 0; i < b.size(); ++i) ASSERT_EQ(b.as<uint8_t>()[i], 0) << i;
}

TEST(AlignedBufferTest, HugeBuffersAreHugePageAlignedZeroedAndMovable) {
  const size_t bytes = AlignedBuffer::kHugePage + 12345;
  AlignedBuffer b = AlignedBuffer::huge(bytes);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % AlignedBuffer::kHugePage, 0u);
  EXPECT_EQ(b.size(), bytes);
  for (size_t i = 0; i < bytes; i += 4093) ASSERT_EQ(b.as<uint8_t>()[i], 0) << i;
  EXPECT_EQ(b.as<uint8_t>()[bytes - 1], 0);
  b.as<uint8_t>()[bytes - 1] = 7;
  const std::byte* p = b.data();
  AlignedBuffer moved = std::move(b);
  EXPECT_EQ(moved.data(), p);
  EXPECT_EQ(moved.as<uint8_t>()[bytes - 1], 7);
  EXPECT_EQ(b.data(), nullptr);
}

}  // namespace
}  // namespace llms
