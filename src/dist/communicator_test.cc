#include "dist/communicator.h"

#include <gtest/gtest.h>

#include <vector>

namespace llms {
namespace {

TEST(LocalCommunicator, IsOneRankWhoseCollectivesKeepItsData) {
  LocalCommunicator& c = LocalCommunicator::instance();
  EXPECT_EQ(c.rank(), 0);
  EXPECT_EQ(c.size(), 1);
  std::vector<float> x = {1.5f, -2.0f};
  ASSERT_TRUE(c.allreduce_sum(x.data(), 2).ok());
  EXPECT_EQ(x, (std::vector<float>{1.5f, -2.0f}));
  std::vector<uint8_t> bytes = {1, 2, 3};
  ASSERT_TRUE(c.broadcast(bytes).ok());
  EXPECT_EQ(bytes, (std::vector<uint8_t>{1, 2, 3}));
  std::vector<float> all(2);
  const int64_t counts[] = {2};
  ASSERT_TRUE(c.gather(x, counts, all.data()).ok());
  EXPECT_EQ(all, x);
  std::vector<uint8_t> gathered;
  ASSERT_TRUE(c.allgather(bytes, gathered).ok());
  EXPECT_EQ(gathered, bytes);
}

}  // namespace
}  // namespace llms
