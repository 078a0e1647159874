#include "dist/thread_group.h"
#include "dist/group_check.h"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

namespace llms {
namespace {

// Runs fn(rank) on one thread per member and waits for all.
template <typename F>
void on_every_rank(ThreadGroup& g, F&& fn) {
  std::vector<std::thread> threads;
  for (int r = 0; r < g.size(); ++r) threads.emplace_back([&, r] { fn(r); });
  for (auto& t : threads) t.join();
}

TEST(ThreadGroup, AllreduceAddsInRankOrderAndEveryRankHoldsTheSameBits) {
  ThreadGroup g(3);
  // Float addition is not associative: 1e8 + 1 - 1e8 is 0 in rank order (0, 1, 2),
  // 1 in the order (0, 2, 1).
  const float parts[3] = {1e8f, 1.0f, -1e8f};
  std::vector<float> out(3);
  on_every_rank(g, [&](int r) {
    float x[2] = {parts[r], static_cast<float>(r)};
    ASSERT_TRUE(g.member(r).allreduce_sum(x, 2).ok());
    out[static_cast<size_t>(r)] = x[0];
    EXPECT_EQ(x[1], 3.0f);
  });
  const float rank_order = (parts[0] + parts[1]) + parts[2];
  for (float v : out) EXPECT_EQ(std::memcmp(&v, &rank_order, sizeof v), 0);
}

TEST(ThreadGroup, BroadcastGatherAndAllgatherOverManyRounds) {
  ThreadGroup g(2);
  on_every_rank(g, [&](int r) {
    Communicator& c = g.member(r);
    for (int round = 0; round < 50; ++round) {
      std::vector<uint8_t> plan;
      if (r == 0) plan = {static_cast<uint8_t>(round), 7};
      ASSERT_TRUE(c.broadcast(plan).ok());
      EXPECT_EQ(plan, (std::vector<uint8_t>{static_cast<uint8_t>(round), 7}));
      // Rank r holds r + 1 floats of value r.
      const std::vector<float> mine(static_cast<size_t>(r + 1), static_cast<float>(r));
      const int64_t counts[] = {1, 2};
      std::vector<float> all(3, -1.0f);
      ASSERT_TRUE(c.gather(mine, counts, all.data()).ok());
      if (r == 0) {
        EXPECT_EQ(all, (std::vector<float>{0.0f, 1.0f, 1.0f}));
      }
      const uint8_t id[] = {static_cast<uint8_t>(10 + r)};
      std::vector<uint8_t> ids;
      ASSERT_TRUE(c.allgather(id, ids).ok());
      EXPECT_EQ(ids, (std::vector<uint8_t>{10, 11}));
    }
  });
}

TEST(ThreadGroup, AMemberThatNeverArrivesIsADeadlineNotAHang) {
  ThreadGroup g(2, /*timeout_s=*/0.2);
  float x = 1.0f;
  const Status s = g.member(0).allreduce_sum(&x, 1);  // rank 1 never calls
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.to_string();
}

TEST(ThreadGroup, MessagesBetweenTwoRanksArriveInTheOrderSentWithoutTheSenderWaiting) {
  ThreadGroup g(3, /*timeout_s=*/5);
  // Rank 0 sends rank 2 three messages before rank 2 asks for any (sends never wait);
  // rank 1 sends one too: each pair's stream is its own.
  for (float v : {1.0f, 2.0f, 3.0f}) ASSERT_TRUE(g.member(0).send(2, std::vector<float>{v, -v}).ok());
  ASSERT_TRUE(g.member(1).send(2, std::vector<float>{9.0f}).ok());
  float one = 0;
  ASSERT_TRUE(g.member(2).recv(1, {&one, 1}).ok());
  EXPECT_EQ(one, 9.0f);
  for (float v : {1.0f, 2.0f, 3.0f}) {
    float two[2] = {0, 0};
    ASSERT_TRUE(g.member(2).recv(0, two).ok());
    EXPECT_EQ(two[0], v);
    EXPECT_EQ(two[1], -v);
  }
  EXPECT_TRUE(g.member(0).flush_sends().ok());
}

TEST(ThreadGroup, AMessageNeverSentIsADeadlineAndAWrongLengthAnError) {
  ThreadGroup g(2, /*timeout_s=*/0.2);
  float x[2];
  EXPECT_EQ(g.member(1).recv(0, x).code(), StatusCode::kDeadlineExceeded);
  ASSERT_TRUE(g.member(0).send(1, std::vector<float>{1.0f}).ok());
  EXPECT_EQ(g.member(1).recv(0, x).code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(g.member(0).send(0, std::vector<float>{1.0f}).ok()) << "no message to oneself";
}

}  // namespace
}  // namespace llms

namespace llms {
namespace {

TEST(GroupCheck, RefusesOnEveryRankWhenOneRankHasAnotherModelFile) {
  for (bool same : {true, false}) {
    ThreadGroup g(3);
    std::vector<Status> verdicts(3);
    on_every_rank(g, [&](int r) {
      const GroupFact facts[] = {{"build", {1, 2}}, {"model file", {3, (!same && r == 2) ? 5u : 4u}}};
      verdicts[static_cast<size_t>(r)] = check_group_agrees(g.member(r), facts);
    });
    for (const Status& v : verdicts) {
      if (same) {
        EXPECT_TRUE(v.ok()) << v.to_string();
      } else {
        EXPECT_EQ(v.code(), StatusCode::kFailedPrecondition);
        EXPECT_NE(v.message().find("rank 2's model file"), std::string::npos) << v.message();
      }
    }
  }
}

}  // namespace
}  // namespace llms
