#pragma once
// Zeroed, 64-byte-aligned host memory for tensors and scratch, freed when the last shared_ptr goes.
//
// Blocks of kMappedFromBytes and more are mapped from the kernel (mmap) and unmapped when freed, so
// their pages go back to the system at once. Through malloc they mostly did not: glibc raises its
// mmap threshold to the largest block freed (up to 32 MiB) and then serves such blocks from its
// heap, which returns memory only from its top. A run whose shapes change (a batch ramp,
// --balance's shares, evaluation's batch between training's) reallocates every activation at each
// change, and the holes stayed in the process: a ResNet-50 batch-ramp run's max RSS was 4.0 GB
// through malloc, 1.9 GB mapped. The kernel's pages come zeroed, so large blocks skip the memset.
#include <cstddef>
#include <memory>

namespace sb::models {

constexpr size_t kMappedFromBytes = size_t{256} << 10;
constexpr size_t kHostBlockAlignment = 64;  // a cache line; what vector loads and oneDNN want

// Empty when the system has no memory to give.
std::shared_ptr<void> zeroed_host_block(size_t bytes);

}  // namespace sb::models
