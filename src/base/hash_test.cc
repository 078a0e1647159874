#include "base/hash.h"

#include <gtest/gtest.h>

#include <string>

namespace llms {
namespace {

TEST(HashTest, DeterministicAndSensitive) {
  const std::string a = "hello world";
  EXPECT_EQ(hash64(a.data(), a.size()), hash64(a.data(), a.size()));
  EXPECT_NE(hash64(a.data(), a.size()), hash64(a.data(), a.size() - 1));
  EXPECT_EQ(hash128(a.data(), a.size()), hash128(a.data(), a.size()));
  EXPECT_NE(hash128(a.data(), a.size(), 1), hash128(a.data(), a.size(), 2));
}

TEST(HashTest, BuilderSeparatesFields) {
  HashBuilder x, y, z;
  x.add("ab").add("c");
  y.add("a").add("bc");
  z.add("ab").add("c");
  EXPECT_NE(x.finish128(), y.finish128());
  EXPECT_EQ(x.finish128(), z.finish128());
}

}  // namespace
}  // namespace llms
