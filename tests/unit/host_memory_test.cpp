// The loader's host memory: a caching pool hands a released block of the same size out again
// instead of asking the raw allocator (pinning pages is slow), batches built through it hold the
// same data as heap ones, and everything goes back to the raw allocator at the end.
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "models/data/host_memory.hpp"
#include "models/data/loader.hpp"
#include "models/data/synthetic.hpp"

namespace sb::models {
namespace {

int live_blocks = 0;
void* counting_allocate(size_t bytes) {
  ++live_blocks;
  return std::malloc(bytes);
}
void counting_free(void* block) {
  --live_blocks;
  std::free(block);
}

TEST(HostMemory, ReleasedBlocksOfTheSameSizeAreReused) {
  {
    CachingHostMemory pool(counting_allocate, counting_free);
    void* a = pool.allocate(1000);
    void* b = pool.allocate(1000);
    EXPECT_NE(a, b);
    pool.release(a, 1000);
    EXPECT_EQ(pool.allocate(1000), a);  // from the cache
    void* c = pool.allocate(2000);      // another size: a new block
    EXPECT_EQ(pool.raw_allocations(), 3u);
    pool.release(a, 1000);
    pool.release(b, 1000);
    pool.release(c, 2000);
    EXPECT_EQ(live_blocks, 3);  // cached, not freed
  }
  EXPECT_EQ(live_blocks, 0);  // the pool frees its cache
}

TEST(HostMemory, LoaderBatchesInThePoolMatchHeapBatches) {
  CachingHostMemory pool(counting_allocate, counting_free);
  DataSplits data = open_synthetic(16);
  Loader heap(*data.train, Sampler(64, 16, 0, 1, 3, true), 2, 2);
  Loader pooled(*data.train, Sampler(64, 16, 0, 1, 3, true), 2, 2, &pool);
  heap.start_epoch(0);
  pooled.start_epoch(0);
  for (int b = 0; b < 4; ++b) {
    std::optional<Batch> x = heap.next(), y = pooled.next();
    ASSERT_TRUE(x && y);
    EXPECT_TRUE(std::equal(x->images.begin(), x->images.end(), y->images.begin(), y->images.end()));
    EXPECT_EQ(x->labels, y->labels);
  }
  pooled.stop();
  // Four batches of one size, two built ahead at most at a time: a few blocks, reused.
  EXPECT_LE(pool.raw_allocations(), 4u);
}

}  // namespace
}  // namespace sb::models
