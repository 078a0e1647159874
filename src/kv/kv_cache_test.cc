#include "kv/kv_cache.h"

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

}  // namespace
}  // namespace llms
