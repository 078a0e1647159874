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

TEST(ThreadGroup, AMessageNoRankTakesFailsTheSendersFlush) {
  ThreadGroup g(2, /*timeout_s=*/0.2);
  ASSERT_TRUE(g.member(0).send(1, std::vector<float>{1.0f}).ok());
  const Status s = g.member(0).flush_sends();
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.to_string();
  EXPECT_NE(s.message().find("rank 1 did not take"), std::string::npos) << s.to_string();
}

// Six ranks as a grid of 2 stages × 3 tensor ranks (rank = stage × 3 + tensor rank):
// the rows add among themselves only, the columns carry messages by stage, and a
// key ranks the members against their world order.
TEST(ThreadGroup, SplitMakesTheRowsAndColumnsOfAGrid) {
  ThreadGroup g(6, /*timeout_s=*/5);
  std::vector<float> row_sum(6), got(6, -1);
  std::vector<int> row_rank(6), column_rank(6), reversed(6);
  on_every_rank(g, [&](int r) {
    const int stage = r / 3, t = r % 3;
    auto row = g.member(r).split(stage, t);
    auto column = g.member(r).split(t, stage);
    auto backwards = g.member(r).split(0, -r);  // one group, ranked by a descending key
    ASSERT_TRUE(row.ok() && column.ok() && backwards.ok());
    row_rank[static_cast<size_t>(r)] = (*row)->rank();
    column_rank[static_cast<size_t>(r)] = (*column)->rank();
    reversed[static_cast<size_t>(r)] = (*backwards)->rank();
    EXPECT_EQ((*row)->size(), 3);
    EXPECT_EQ((*column)->size(), 2);
    float x = static_cast<float>(r);
    ASSERT_TRUE((*row)->allreduce_sum(&x, 1).ok());
    row_sum[static_cast<size_t>(r)] = x;
    float v = static_cast<float>(100 + r);
    if (stage == 0) {
      ASSERT_TRUE((*column)->send(1, {&v, 1}).ok());
      ASSERT_TRUE((*column)->flush_sends().ok());
    } else {
      ASSERT_TRUE((*column)->recv(0, {&got[static_cast<size_t>(r)], 1}).ok());
    }
  });
  EXPECT_EQ(row_rank, (std::vector<int>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(column_rank, (std::vector<int>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(reversed, (std::vector<int>{5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(row_sum, (std::vector<float>{3, 3, 3, 12, 12, 12}));  // 0+1+2, 3+4+5
  EXPECT_EQ(std::vector<float>(got.begin() + 3, got.end()), (std::vector<float>{100, 101, 102}));
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
