#include "engine/stop_matcher.h"

#include <gtest/gtest.h>

namespace llms {
namespace {

TEST(StopMatcherTest, MatchAcrossChunksIsExcluded) {
  StopMatcher m({"\n\n", "END"});
  std::string out;
  out += m.push("Hello E");
  EXPECT_EQ(out, "Hello ");  // "E" may start "END"
  out += m.push("N");
  EXPECT_FALSE(m.stopped());
  out += m.push("D and more");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.matched(), "END");
  EXPECT_EQ(out, "Hello ");
  EXPECT_EQ(m.push("x"), "");
}

TEST(StopMatcherTest, FalseStartIsReleased) {
  StopMatcher m({"END"});
  std::string out = m.push("EN");
  EXPECT_EQ(out, "");
  out += m.push("X");
  EXPECT_EQ(out, "ENX");
  out += m.push("E");
  out += m.finish();
  EXPECT_EQ(out, "ENXE");
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcherTest, EarliestStopWins) {
  StopMatcher m({"world", "lo w"});
  EXPECT_EQ(m.push("hello world"), "hel");
  EXPECT_EQ(m.matched(), "lo w");
}

TEST(StopMatcherTest, NoStopsPassesEverythingThrough) {
  StopMatcher m({});
  EXPECT_EQ(m.push("abc"), "abc");
  EXPECT_EQ(m.finish(), "");
}

}  // namespace
}  // namespace llms
