#pragma once
// The launch shape every grid-stride kernel here uses: 256 threads a block, enough blocks to cover
// the elements once, capped so that big arrays loop instead of launching millions of blocks.
#include <cstddef>

namespace sb {

inline constexpr int kCudaThreads = 256;

inline int cuda_blocks_for(size_t count) {
  constexpr size_t kMaxBlocks = 4096;
  const size_t blocks = (count + kCudaThreads - 1) / kCudaThreads;
  return static_cast<int>(blocks == 0 ? 1 : blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

}  // namespace sb
