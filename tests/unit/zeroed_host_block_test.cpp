// Host memory for tensors: zeroed and aligned at every size, and large blocks given back to the
// system when freed even where malloc would have kept them (holes in its heap).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "common/peak_memory.hpp"
#include "models/zeroed_host_block.hpp"

namespace sb::models {
namespace {

TEST(ZeroedHostBlock, EverySizeComesZeroedAndAligned) {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{100}, kMappedFromBytes - 1, kMappedFromBytes, size_t{3} << 20}) {
    std::shared_ptr<void> block = zeroed_host_block(bytes);
    ASSERT_NE(block, nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(block.get()) % 64, 0u) << bytes;
    const auto* p = static_cast<const unsigned char*>(block.get());
    for (size_t i = 0; i < bytes; ++i) ASSERT_EQ(p[i], 0) << bytes << " bytes, at " << i;
  }
}

TEST(ZeroedHostBlock, LargeBlocksFreedAmongOthersGoBackToTheSystem) {
  // A process that has freed a large block (16 MiB, under glibc's 32 MiB cap on its threshold):
  // glibc's malloc would now serve 2 MiB blocks from its heap, where the ones freed between
  // others stay resident. Volatile, or the compiler drops the pair.
  void* volatile large = std::malloc(size_t{16} << 20);
  ASSERT_NE(large, nullptr);
  std::memset(large, 0, 64);
  std::free(large);
  constexpr size_t kBlock = size_t{2} << 20, kBlocks = 64;
  std::vector<std::shared_ptr<void>> blocks;
  const int64_t before = resident_bytes();
  for (size_t i = 0; i < kBlocks; ++i) {
    blocks.push_back(zeroed_host_block(kBlock));
    ASSERT_NE(blocks.back(), nullptr);
    std::memset(blocks.back().get(), 1, kBlock);  // touched: resident
  }
  const int64_t full = resident_bytes();
  ASSERT_GE(static_cast<double>(full - before), 0.9 * static_cast<double>(kBlocks * kBlock));
  for (size_t i = 0; i < kBlocks; i += 2) blocks[i].reset();  // every other one: holes, not the top
  const double freed = static_cast<double>(kBlocks / 2 * kBlock);
  const double returned = static_cast<double>(full) - static_cast<double>(resident_bytes());
  EXPECT_GE(returned, 0.9 * freed) << "of " << freed / (1 << 20) << " MiB freed, " << returned / (1 << 20)
                                   << " MiB went back";
}

}  // namespace
}  // namespace sb::models
