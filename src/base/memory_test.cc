#include "base/memory.h"

#include <gtest/gtest.h>

#include <vector>

namespace llms {
namespace {

TEST(MemoryTest, MachineMemoryIsPositive) { EXPECT_GT(machine_memory_bytes(), 0); }

TEST(MemoryTest, ConfiguredLimitWinsWhenSet) {
  EXPECT_EQ(effective_memory_limit(12345), 12345);
  EXPECT_EQ(effective_memory_limit(1), 1);
}

TEST(MemoryTest, UnsetLimitIsTheMachines) {
  EXPECT_EQ(effective_memory_limit(0), machine_memory_bytes());
  EXPECT_EQ(effective_memory_limit(-1), machine_memory_bytes());
}

TEST(MemoryTest, ProcessMemoryGrowsWithWhatItTouches) {
  const int64_t before = process_rss_bytes();
  ASSERT_GT(before, 0);
  std::vector<char> touched(64 << 20, 1);  // 64 MiB, every page written
  asm volatile("" : : "r"(touched.data()) : "memory");  // the writes happen before the probe
  const int64_t after = process_rss_bytes();
  EXPECT_GE(after - before, int64_t{48} << 20) << "touched " << touched.size() << " bytes";
}

}  // namespace
}  // namespace llms
