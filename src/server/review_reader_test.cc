#include "server/review_reader.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace llms {
namespace {

std::string write_log() {
  const std::string path = ::testing::TempDir() + "/review_reader.jsonl";
  std::ofstream out(path);
  out << R"({"type":"request","time":"t1","id":"a","version":"v1","kind":"completion","prompt":"Hi, \"you\"","answer":"Hello","finish_reason":"stop","latency_s":0.5})"
      << "\n"
      << R"({"type":"request","time":"t2","id":"b","version":"v2","kind":"chat","messages":[{"role":"user","content":"Q"}],"answer":"A","finish_reason":"length","latency_s":1})"
      << "\n"
      << R"({"type":"feedback","id":"b","version":"v2","rating":-1,"labels":["complaint"],"comment":"bad"})" << "\n"
      << R"({"type":"request","time":"t3","id":"c","version":"v2","kind":"completion","prompt":"P","answer":"line1\nline2","finish_reason":"stop","latency_s":2})"
      << "\n";
  return path;
}

std::vector<std::string> ids(const std::vector<ReviewEntry>& entries) {
  std::vector<std::string> out;
  for (const auto& e : entries) out.push_back(e.request["id"]);
  return out;
}

TEST(ReviewReader, FiltersByVersionFinishReasonAndRating) {
  const std::string path = write_log();
  EXPECT_EQ(ids(read_review_log(path, {}).value()), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(ids(read_review_log(path, {.version = "v2"}).value()), (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(ids(read_review_log(path, {.finish_reason = "stop"}).value()), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(ids(read_review_log(path, {.rating = -1}).value()), (std::vector<std::string>{"b"}));
  EXPECT_TRUE(read_review_log(path, {.rating = 1}).value().empty());
  EXPECT_EQ(read_review_log(path, {.limit = 2}).value().size(), 2u);
  std::remove(path.c_str());
}

TEST(ReviewReader, CsvQuotesWhatNeedsIt) {
  const std::string path = write_log();
  const std::string csv = review_csv(read_review_log(path, {}).value());
  EXPECT_EQ(csv,
            "time,id,version,finish_reason,latency_s,ratings,labels,comments,prompt,answer\n"
            "t1,a,v1,stop,0.500,,,,\"Hi, \"\"you\"\"\",Hello\n"
            "t2,b,v2,length,1.000,-1,complaint,bad,user: Q,A\n"
            "t3,c,v2,stop,2.000,,,,P,\"line1\nline2\"\n");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace llms
