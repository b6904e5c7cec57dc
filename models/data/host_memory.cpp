#include "models/data/host_memory.hpp"

#include <algorithm>

namespace sb::models {

constexpr size_t kIdleBound = 3;  // idle bytes held, in peaks in use: the header says why

CachingHostMemory::~CachingHostMemory() {
  for (const Idle& idle : idle_) raw_free_(idle.block);
}

void* CachingHostMemory::allocate(size_t bytes) {
  {
    std::lock_guard lock(mutex_);
    last_asked_[bytes] = ++allocations_;
    in_use_bytes_ += bytes;
    peak_in_use_bytes_ = std::max(peak_in_use_bytes_, in_use_bytes_);
    // The most recently released block of the size: the likeliest still in the CPU's caches.
    auto cached = std::find_if(idle_.rbegin(), idle_.rend(), [&](const Idle& idle) { return idle.bytes == bytes; });
    if (cached != idle_.rend()) {
      void* block = cached->block;
      idle_bytes_ -= bytes;
      idle_.erase(std::next(cached).base());
      return block;
    }
    ++raw_allocations_;
  }
  void* block = raw_allocate_(bytes);
  if (!block) {
    std::lock_guard lock(mutex_);
    in_use_bytes_ -= bytes;
    throw std::bad_alloc();
  }
  return block;
}

void CachingHostMemory::release(void* block, size_t bytes) {
  std::vector<void*> evicted;
  {
    std::lock_guard lock(mutex_);
    in_use_bytes_ -= bytes;
    idle_.push_back({bytes, block});
    idle_bytes_ += bytes;
    while (idle_bytes_ > kIdleBound * peak_in_use_bytes_) {
      auto stalest = std::min_element(idle_.begin(), idle_.end(), [&](const Idle& a, const Idle& b) {
        return last_asked_.at(a.bytes) < last_asked_.at(b.bytes);
      });
      evicted.push_back(stalest->block);
      idle_bytes_ -= stalest->bytes;
      idle_.erase(stalest);
    }
    raw_frees_ += evicted.size();
  }
  // Outside the lock: cudaFreeHost may wait for the device, and the loader's workers need the pool.
  for (void* stale : evicted) raw_free_(stale);
}

size_t CachingHostMemory::raw_allocations() const {
  std::lock_guard lock(mutex_);
  return raw_allocations_;
}

size_t CachingHostMemory::raw_frees() const {
  std::lock_guard lock(mutex_);
  return raw_frees_;
}

size_t CachingHostMemory::idle_bytes() const {
  std::lock_guard lock(mutex_);
  return idle_bytes_;
}

}  // namespace sb::models
