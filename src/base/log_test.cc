#include "base/log.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace llms {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(LogTest, Iso8601IsUtcWithMilliseconds) {
  using std::chrono::milliseconds;
  EXPECT_EQ(iso8601(std::chrono::system_clock::time_point{}), "1970-01-01T00:00:00.000Z");
  // 10^12 ms after the epoch is 2001-09-09 01:46:40 UTC (the billennium).
  EXPECT_EQ(iso8601(std::chrono::system_clock::time_point(milliseconds(1'000'000'000'123))), "2001-09-09T01:46:40.123Z");
}

TEST(LogTest, LevelAndFormatNames) {
  EXPECT_EQ(parse_log_level("warn"), LogLevel::kWarn);
  EXPECT_EQ(parse_log_level("off"), LogLevel::kOff);
  EXPECT_FALSE(parse_log_level("verbose"));
  EXPECT_EQ(parse_log_format("json"), LogFormat::kJson);
  EXPECT_FALSE(parse_log_format("xml"));
  EXPECT_EQ(json_escape("a\"b\\c\nd\x01"), "a\\\"b\\\\c\\nd\\u0001");
}

// A log file gets text or JSON lines at the level set; after the file is moved away
// (rotation), reopening starts a new one at the path.
TEST(LogTest, FileFormatsLevelsAndReopen) {
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_log.txt";
  std::remove(path.c_str());
  const LogLevel level = log_level();
  ASSERT_TRUE(set_log_file(path).ok());
  set_log_level(LogLevel::kInfo);
  set_log_format(LogFormat::kText);
  log_debug("hidden {}", 1);
  log_info("plain {}", 2);
  set_log_format(LogFormat::kJson);
  log_warn("quoted \"{}\"", 3);
  const std::string moved = path + ".1";
  ASSERT_EQ(std::rename(path.c_str(), moved.c_str()), 0);
  ASSERT_TRUE(reopen_log_file().ok());
  log_error("after {}", 4);
  ASSERT_TRUE(set_log_file("").ok());
  set_log_format(LogFormat::kText);
  set_log_level(level);

  const std::string first = read_all(moved);
  EXPECT_EQ(first.find("hidden"), std::string::npos) << first;
  const size_t nl = first.find('\n');
  ASSERT_NE(nl, std::string::npos);
  const std::string text_line = first.substr(0, nl);
  // [I 2026-12-06T16:20:01.123Z] plain 2
  ASSERT_GE(text_line.size(), 28u) << text_line;
  EXPECT_EQ(text_line.substr(0, 3), "[I ");
  EXPECT_EQ(text_line[13], 'T');
  EXPECT_EQ(text_line[26], 'Z');
  EXPECT_EQ(text_line.substr(27), "] plain 2");
  const std::string json_line = first.substr(nl + 1);
  EXPECT_EQ(json_line.rfind("{\"time\":\"", 0), 0u) << json_line;
  EXPECT_NE(json_line.find("Z\",\"level\":\"warn\",\"msg\":\"quoted \\\"3\\\"\"}\n"), std::string::npos) << json_line;
  EXPECT_NE(read_all(path).find("\"msg\":\"after 4\""), std::string::npos);
  std::remove(path.c_str());
  std::remove(moved.c_str());
}

}  // namespace
}  // namespace llms
