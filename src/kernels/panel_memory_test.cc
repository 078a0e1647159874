#include "kernels/panel_memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace llms {
namespace {

// Allocations small and large are aligned, zeroed and never overlap, even while the
// memory of earlier ones is written; they stay valid after others are released.
TEST(PanelMemoryTest, AllocationsAreAlignedZeroedAndDisjoint) {
  const int64_t sizes[] = {64, 100, 300 * 1024, 2 * 1024 * 1024 + 64, 20 << 20, 64, 3 << 20};
  std::vector<PanelMemory> mems;
  for (int64_t bytes : sizes) {
    PanelMemory m = PanelMemory::allocate(bytes);
    ASSERT_NE(m.data(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(m.data()) % 64, 0u);
    for (int64_t i = 0; i < bytes; i += 61) ASSERT_EQ(m.data()[i], 0) << bytes << " at " << i;
    ASSERT_EQ(m.data()[bytes - 1], 0);
    for (int64_t i = 0; i < bytes; ++i) m.data()[i] = static_cast<uint8_t>(mems.size() + 1);
    mems.push_back(m);
  }
  for (size_t k = 0; k < mems.size(); ++k) {
    for (int64_t i = 0; i < sizes[k]; i += 997) ASSERT_EQ(mems[k].data()[i], k + 1) << "allocation " << k;
    ASSERT_EQ(mems[k].data()[sizes[k] - 1], k + 1);
  }
  // Release the first ones; later ones keep their bytes, new ones are zeroed.
  mems.erase(mems.begin(), mems.begin() + 3);
  PanelMemory fresh = PanelMemory::allocate(4096);
  for (int64_t i = 0; i < 4096; ++i) ASSERT_EQ(fresh.data()[i], 0);
  for (size_t k = 0; k < mems.size(); ++k) ASSERT_EQ(mems[k].data()[0], k + 4);
}

}  // namespace
}  // namespace llms
