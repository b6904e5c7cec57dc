#include "models/zeroed_host_block.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace sb::models {

std::shared_ptr<void> zeroed_host_block(size_t bytes) {
  const size_t rounded =
      (std::max<size_t>(bytes, 1) + kHostBlockAlignment - 1) / kHostBlockAlignment * kHostBlockAlignment;
  if (rounded >= kMappedFromBytes) {
    void* p = mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    return std::shared_ptr<void>(p, [rounded](void* block) { munmap(block, rounded); });
  }
  void* p = std::aligned_alloc(kHostBlockAlignment, rounded);
  if (p == nullptr) return nullptr;
  std::memset(p, 0, rounded);
  return std::shared_ptr<void>(p, std::free);
}

}  // namespace sb::models
