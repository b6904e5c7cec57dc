// The loader's host memory: a caching pool hands a released block of the same size out again
// instead of asking the raw allocator (pinning pages is slow), batches built through it hold the
// same data as heap ones, the sizes a run has left behind are given back once the idle blocks pass
// their bound while the sizes that come back every epoch are kept, and everything goes back to the
// raw allocator at the end.
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

// Takes `count` blocks of `bytes` at once, then gives them all back: the loader's batches of one
// size, built ahead and then consumed.
void cycle(CachingHostMemory& pool, size_t bytes, int count) {
  std::vector<void*> blocks;
  for (int i = 0; i < count; ++i) blocks.push_back(pool.allocate(bytes));
  for (void* block : blocks) pool.release(block, bytes);
}

TEST(HostMemory, SizesARunHasLeftAreGivenBack) {
  {
    CachingHostMemory pool(counting_allocate, counting_free);
    // Progressive resizing: six image sizes in turn, three batches in flight at each.
    for (size_t bytes = 1000; bytes <= 6000; bytes += 1000)
      for (int step = 0; step < 5; ++step) cycle(pool, bytes, 3);
    EXPECT_EQ(pool.raw_allocations(), 18u);  // three blocks a size, reused within the stage
    // Held without the bound: 3 x 21000 bytes; the bound is three times the peak in use (3 x 6000).
    EXPECT_EQ(pool.idle_bytes(), 3u * 18000);
    EXPECT_EQ(pool.raw_frees(), 6u);  // the first two sizes' blocks
    EXPECT_EQ(live_blocks, 12);
    // The sizes used last are still there; the first is not.
    const size_t raw_before = pool.raw_allocations();
    cycle(pool, 6000, 3);
    cycle(pool, 5000, 3);
    EXPECT_EQ(pool.raw_allocations(), raw_before);
    cycle(pool, 1000, 1);
    EXPECT_EQ(pool.raw_allocations(), raw_before + 1) << "the stalest size was kept";
  }
  EXPECT_EQ(live_blocks, 0);
}

TEST(HostMemory, SizesThatComeBackEveryEpochAreKept) {
  CachingHostMemory pool(counting_allocate, counting_free);
  size_t after_first_epoch = 0;
  for (int epoch = 0; epoch < 10; ++epoch) {
    for (int step = 0; step < 20; ++step) cycle(pool, 4000, 3);  // full batches
    cycle(pool, 1500, 1);                                       // the epoch's short last batch
    cycle(pool, 6000, 2);                                       // evaluation, larger batches
    if (epoch == 0) after_first_epoch = pool.raw_allocations();
  }
  EXPECT_EQ(after_first_epoch, 6u);
  EXPECT_EQ(pool.raw_allocations(), after_first_epoch) << "an epoch's sizes were pinned again";
  EXPECT_EQ(pool.raw_frees(), 0u);
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
