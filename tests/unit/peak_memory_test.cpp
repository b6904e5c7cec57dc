// The process's peak resident memory: at least what is resident now, and it keeps a peak that
// has since been freed.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "common/peak_memory.hpp"
#include "models/zeroed_host_block.hpp"

namespace sb {
namespace {

// The peak can trail what /proc says is resident by a few pages (common/peak_memory.hpp).
constexpr int64_t kCounterSlack = int64_t{4} << 20;

TEST(PeakMemory, IsAtLeastWhatIsResidentAndKeepsAPeakSinceFreed) {
  EXPECT_GE(peak_resident_bytes(), resident_bytes() - kCounterSlack);
  constexpr size_t kBlock = size_t{96} << 20;
  int64_t while_held = 0;
  {
    std::shared_ptr<void> block = models::zeroed_host_block(kBlock);
    ASSERT_NE(block, nullptr);
    std::memset(block.get(), 1, kBlock);  // touched: resident
    while_held = resident_bytes();
  }
  ASSERT_LT(resident_bytes(), while_held - static_cast<int64_t>(kBlock / 2)) << "the block went back when freed";
  EXPECT_GE(peak_resident_bytes(), while_held - kCounterSlack) << "the peak stays";
}

}  // namespace
}  // namespace sb
