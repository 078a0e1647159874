#include "kv/kv_cache.h"

#include "base/memory.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

namespace llms {
namespace {

// Pages of [p, p + bytes) the kernel holds in memory, by mincore().
int64_t resident_pages(const void* p, size_t bytes) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in((bytes + page - 1) / page);
  EXPECT_EQ(mincore(const_cast<void*>(p), bytes, in.data()), 0);
  int64_t n = 0;
  for (unsigned char c : in) n += c & 1;
  return n;
}

KvCacheConfig config(bool commit) {
  KvCacheConfig c;
  c.n_layer = 4;
  c.n_kv_heads = 2;
  c.head_dim = 64;
  c.block_size = 16;
  c.num_blocks = 1024;  // 16 MiB in F16
  c.k_type = c.v_type = DType::kF16;
  c.commit_at_start = commit;
  return c;
}

// By default pages are committed as blocks are written (none is, here, beyond what
// the allocator itself writes: a sanitizer's allocator fills the first page, which
// commits the whole first 2 MiB where the buffer is backed by huge pages); with
// commit_at_start every page of the cache is.
TEST(KvCacheTest, CommitAtStartMakesEveryPageResident) {
  KvCache lazy(config(false));
  KvCache eager(config(true));
  const size_t bytes = static_cast<size_t>(config(true).bytes_per_block() * 1024);
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const uint8_t* lazy_base = lazy.layer(0).k;
  const uint8_t* eager_base = eager.layer(0).k;
  const auto pages = static_cast<int64_t>((bytes + page - 1) / page);
  EXPECT_LE(resident_pages(lazy_base, bytes), static_cast<int64_t>((size_t{2} << 20) / page));
  EXPECT_LT((size_t{2} << 20) / page * 4, static_cast<size_t>(pages));  // the bound tells lazy from eager
  EXPECT_EQ(resident_pages(eager_base, bytes), pages);
}

// Free blocks given back: their pages leave memory (RSS falls by the cache's size,
// as mincore() and the process's resident memory both say), the blocks kept stay,
// and a discarded block can be written again.
TEST(KvCacheTest, DiscardedBlocksReturnTheirPages) {
  KvCache cache(config(true));
  const size_t bytes = static_cast<size_t>(config(true).bytes_per_block() * 1024);
  const auto page = static_cast<int64_t>(sysconf(_SC_PAGESIZE));
  const uint8_t* base = cache.layer(0).k;
  const int64_t pages = resident_pages(base, bytes);
  ASSERT_EQ(pages * page, static_cast<int64_t>((bytes + page - 1) / page * page));
  const int64_t rss_before = process_rss_bytes();
  std::vector<int32_t> free_blocks;
  for (int32_t b = 1; b < 1024; ++b) free_blocks.push_back(b);  // block 0 stays in use
  const int64_t discarded = cache.discard_blocks(free_blocks);
  const int64_t rss_after = process_rss_bytes();
  const int64_t block_bytes = config(true).bytes_per_block();
  EXPECT_GE(discarded, 1023 * block_bytes - page);  // whole pages of the run only
  EXPECT_LE(discarded, 1023 * block_bytes);
  EXPECT_EQ(resident_pages(base, bytes) * page, pages * page - discarded);
  EXPECT_GE(rss_before - rss_after, discarded * 9 / 10) << "RSS " << rss_before << " -> " << rss_after;
  EXPECT_EQ(resident_pages(base, static_cast<size_t>(block_bytes)) * page, block_bytes);  // block 0 kept
  KvLayerView v = cache.layer(3);
  v.k[5 * v.k_block_stride] = 7;  // a discarded block is written again
  EXPECT_EQ(v.k[5 * v.k_block_stride], 7);
}

}  // namespace
}  // namespace llms
