#include "models/data/host_memory.hpp"

namespace sb::models {

CachingHostMemory::~CachingHostMemory() {
  for (const auto& [bytes, block] : free_) raw_free_(block);
}

void* CachingHostMemory::allocate(size_t bytes) {
  {
    std::lock_guard lock(mutex_);
    auto cached = free_.find(bytes);
    if (cached != free_.end()) {
      void* block = cached->second;
      free_.erase(cached);
      return block;
    }
    ++raw_allocations_;
  }
  void* block = raw_allocate_(bytes);
  if (!block) throw std::bad_alloc();
  return block;
}

void CachingHostMemory::release(void* block, size_t bytes) {
  std::lock_guard lock(mutex_);
  free_.emplace(bytes, block);
}

size_t CachingHostMemory::raw_allocations() const {
  std::lock_guard lock(mutex_);
  return raw_allocations_;
}

}  // namespace sb::models
