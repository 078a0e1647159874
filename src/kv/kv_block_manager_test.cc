#include "kv/kv_block_manager.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "base/random.h"

namespace llms {
namespace {

constexpr int kB = 4;

TEST(KvBlockManagerTest, SecondSequenceReusesCachedPrefix) {
  KvBlockManager m(16, kB, Hash128{1, 2}, true);
  const std::vector<int32_t> prompt = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};  // 2 full blocks + 2
  SequenceBlocks a;
  EXPECT_EQ(m.begin_sequence(a, prompt), 0);
  ASSERT_TRUE(m.reserve(a, 10));
  m.commit(a, prompt);
  EXPECT_EQ(a.hashes.size(), 2u);
  SequenceBlocks b;
  EXPECT_EQ(m.begin_sequence(b, prompt), 8);
  EXPECT_EQ(b.table.blocks[0], a.table.blocks[0]);
  EXPECT_EQ(b.table.blocks[1], a.table.blocks[1]);
  EXPECT_EQ(m.ref_count(a.table.blocks[0]), 2);
  EXPECT_EQ(m.stats().hit_tokens, 8);
  // A prompt of exactly two blocks reuses only the first: its last token is computed.
  SequenceBlocks c;
  EXPECT_EQ(m.begin_sequence(c, std::span(prompt).first(8)), 4);
  m.release(a);
  m.release(b);
  m.release(c);
  EXPECT_EQ(m.num_used(), 0);
  EXPECT_EQ(m.num_cached_idle(), 2);
  EXPECT_EQ(m.num_available(), 16);
  // Still findable after its owners left.
  SequenceBlocks d;
  EXPECT_EQ(m.begin_sequence(d, prompt), 8);
  m.release(d);
}

TEST(KvBlockManagerTest, DifferentSeedNeverMatches) {
  KvBlockManager m(8, kB, Hash128{1, 1}, true);
  const std::vector<int32_t> p = {1, 2, 3, 4, 5};
  SequenceBlocks a;
  m.begin_sequence(a, p);
  ASSERT_TRUE(m.reserve(a, 5));
  m.commit(a, p);
  KvBlockManager other(8, kB, Hash128{1, 2}, true);
  SequenceBlocks b;
  EXPECT_EQ(other.begin_sequence(b, p), 0);
}

// A salt scopes the prefix cache: same salt shares, another salt or none does not.
TEST(KvBlockManagerTest, SaltedSequencesShareOnlyWithTheSameSalt) {
  KvBlockManager m(16, kB, Hash128{1, 1}, true);
  const std::vector<int32_t> p = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  SequenceBlocks a;
  a.salt = 7;
  m.begin_sequence(a, p);
  ASSERT_TRUE(m.reserve(a, 9));
  m.commit(a, p);
  EXPECT_EQ(m.cached_prefix_tokens(p, 7), 8);
  EXPECT_EQ(m.cached_prefix_tokens(p, 8), 0);
  EXPECT_EQ(m.cached_prefix_tokens(p), 0);
  SequenceBlocks unsalted, other, same;
  other.salt = 8;
  same.salt = 7;
  EXPECT_EQ(m.begin_sequence(unsalted, p), 0);
  EXPECT_EQ(m.begin_sequence(other, p), 0);
  EXPECT_EQ(m.begin_sequence(same, p), 8);
  for (SequenceBlocks* s : {&a, &unsalted, &other, &same}) m.release(*s);
}

TEST(KvBlockManagerTest, EvictsLeastRecentlyUsedWhenFull) {
  KvBlockManager m(3, kB, Hash128{}, true);
  std::vector<SequenceBlocks> seqs(3);
  for (int i = 0; i < 3; ++i) {
    std::vector<int32_t> p = {i * 10, i * 10 + 1, i * 10 + 2, i * 10 + 3, 99};
    m.begin_sequence(seqs[i], p);
    ASSERT_TRUE(m.reserve(seqs[i], 4));
    m.commit(seqs[i], std::span(p).first(4));
    m.release(seqs[i]);
  }
  EXPECT_EQ(m.num_cached_idle(), 3);
  SequenceBlocks n;
  ASSERT_TRUE(m.reserve(n, 4));  // takes the oldest cached block (sequence 0's)
  EXPECT_EQ(m.stats().evictions, 1);
  SequenceBlocks probe;
  EXPECT_EQ(m.begin_sequence(probe, std::vector<int32_t>{0, 1, 2, 3, 99}), 0);
  m.release(probe);
  SequenceBlocks probe1;
  EXPECT_EQ(m.begin_sequence(probe1, std::vector<int32_t>{10, 11, 12, 13, 99}), 4);
  m.release(probe1);
  m.release(n);
}

TEST(KvBlockManagerTest, NoRoomLeavesEverythingUnchanged) {
  KvBlockManager m(2, kB, Hash128{}, false);
  SequenceBlocks a;
  ASSERT_TRUE(m.reserve(a, 5));
  EXPECT_FALSE(m.reserve(a, 4));  // needs a third block
  EXPECT_EQ(a.table.blocks.size(), 2u);
  EXPECT_EQ(a.table.num_tokens, 5);
  EXPECT_EQ(m.num_available(), 0);
  m.release(a);
  EXPECT_EQ(m.num_available(), 2);
}

// Thousands of random operations against a simple model of the expected state. The
// test writes token ids into a simulated cache, so a block handed to two owners or a
// wrong prefix hit shows up as a sequence reading back tokens that are not its own.
TEST(KvBlockManagerTest, RandomizedAgainstModel) {
  const int32_t kBlocks = 24;
  KvBlockManager m(kBlocks, kB, Hash128{5, 6}, true);
  std::vector<std::array<int32_t, kB>> content(kBlocks);
  struct Live {
    SequenceBlocks blocks;
    std::vector<int32_t> tokens;  // all computed (written) tokens
  };
  std::map<int, Live> live;
  int next_id = 0;
  Rng rng(2024);
  const std::vector<std::vector<int32_t>> prefixes = {{1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 3, 4, 9, 9, 9, 9}, {7, 7}};

  auto write = [&](Live& s, int32_t tok) {
    const int64_t pos = static_cast<int64_t>(s.tokens.size());
    if (!m.reserve(s.blocks, pos + 1 - s.blocks.table.num_tokens)) return false;
    content[s.blocks.table.blocks[pos / kB]][pos % kB] = tok;
    s.tokens.push_back(tok);
    m.commit(s.blocks, s.tokens);
    return true;
  };
  auto check = [&]() {
    std::map<int32_t, int> owners;
    for (auto& [id, s] : live) {
      for (int64_t p = 0; p < static_cast<int64_t>(s.tokens.size()); ++p) {
        ASSERT_EQ(content[s.blocks.table.blocks[p / kB]][p % kB], s.tokens[p]) << "seq " << id << " pos " << p;
      }
      std::set<int32_t> distinct(s.blocks.table.blocks.begin(), s.blocks.table.blocks.end());
      ASSERT_EQ(distinct.size(), s.blocks.table.blocks.size());
      for (int32_t b : s.blocks.table.blocks) owners[b]++;
    }
    for (int32_t b = 0; b < kBlocks; ++b) ASSERT_EQ(m.ref_count(b), owners.count(b) ? owners[b] : 0) << "block " << b;
    ASSERT_EQ(m.num_used(), static_cast<int32_t>(owners.size()));
    ASSERT_EQ(m.num_used() + m.num_available(), kBlocks);
  };

  for (int step = 0; step < 5000; ++step) {
    const uint64_t op = rng.below(10);
    if (op < 3 || live.empty()) {  // new sequence, often on a shared prefix
      Live s;
      std::vector<int32_t> prompt = prefixes[rng.below(prefixes.size())];
      const uint64_t extra = rng.below(6);
      for (uint64_t i = 0; i < extra; ++i) prompt.push_back(static_cast<int32_t>(rng.below(20)));
      const int64_t cached = m.begin_sequence(s.blocks, prompt);
      s.tokens.assign(prompt.begin(), prompt.begin() + cached);
      bool ok = true;
      for (size_t i = static_cast<size_t>(cached); i < prompt.size() && ok; ++i) ok = write(s, prompt[i]);
      if (ok) {
        live.emplace(next_id++, std::move(s));
      } else {
        m.release(s.blocks);
      }
    } else {
      auto it = live.begin();
      std::advance(it, static_cast<long>(rng.below(live.size())));
      if (op < 5) {  // decode a few tokens
        for (int i = 0; i < 3; ++i) {
          if (!write(it->second, static_cast<int32_t>(rng.below(20)))) break;
        }
      } else if (op < 7) {  // speculate: write k proposed tokens, keep the first m
        Live& s = it->second;
        const int64_t k = 1 + static_cast<int64_t>(rng.below(5)), pos = static_cast<int64_t>(s.tokens.size());
        if (!m.reserve(s.blocks, k)) continue;
        std::vector<int32_t> draft;
        for (int64_t j = 0; j < k; ++j) {
          draft.push_back(static_cast<int32_t>(rng.below(20)));
          content[s.blocks.table.blocks[(pos + j) / kB]][(pos + j) % kB] = draft.back();
        }
        const int64_t keep = static_cast<int64_t>(rng.below(static_cast<uint64_t>(k + 1)));
        s.tokens.insert(s.tokens.end(), draft.begin(), draft.begin() + keep);
        m.truncate(s.blocks, static_cast<int64_t>(s.tokens.size()));
        ASSERT_EQ(s.blocks.table.capacity(kB) - static_cast<int64_t>(s.tokens.size()) < kB, true);
        m.commit(s.blocks, s.tokens);
      } else {  // finish
        m.release(it->second.blocks);
        live.erase(it);
      }
    }
    check();
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(m.stats().hit_tokens, 0);
  EXPECT_GT(m.stats().evictions, 0);
  for (auto& [id, s] : live) m.release(s.blocks);
  EXPECT_EQ(m.num_used(), 0);
  EXPECT_EQ(m.num_available(), kBlocks);
}

}  // namespace
}  // namespace llms
