#pragma once
// Where the loader's batches live in host memory. By default the heap; a GPU backend offers
// page-locked (pinned) memory instead, which its copies to the device read by DMA at the link's
// full rate, where pageable memory goes through a staging copy at a fraction of it. Pinning pages
// is slow, so the blocks are cached by size and handed out again: a run's batches are a few sizes.
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <new>
#include <type_traits>
#include <vector>

namespace sb::models {

class HostMemory {
 public:
  virtual ~HostMemory() = default;
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* block, size_t bytes) = 0;
};

// Caches released blocks by size over raw allocate/free functions (cudaHostAlloc/cudaFreeHost
// for pinned memory); thread-safe, as the loader's workers allocate concurrently.
//
// The idle blocks it holds are bounded by three times the peak of the bytes handed out at once. A
// run that moves on to other sizes for good (progressive resizing, a batch ramp, --balance's
// per-rank shares, which can change each epoch) would otherwise keep every size's blocks pinned to
// the end. Three times, because an epoch comes back to three sizes (its batches, its short last
// batch, evaluation's batches), and the idle blocks of one size are at most the peak (a size's
// blocks were all in use at once, or the pool would have reused one): those three never evict
// each other. Over the bound, the blocks of the size least recently asked for go first. What was
// freed is counted; the pool frees the rest when destroyed.
class CachingHostMemory : public HostMemory {
 public:
  using RawAllocate = void* (*)(size_t bytes);  // nullptr when out of memory
  using RawFree = void (*)(void* block);
  CachingHostMemory(RawAllocate allocate, RawFree free) : raw_allocate_(allocate), raw_free_(free) {}
  ~CachingHostMemory() override;
  void* allocate(size_t bytes) override;
  void release(void* block, size_t bytes) override;
  size_t raw_allocations() const;  // blocks obtained from the raw allocator so far
  size_t raw_frees() const;        // blocks given back to it before the end (evicted)
  size_t idle_bytes() const;       // held in the cache now

 private:
  struct Idle {
    size_t bytes;
    void* block;
  };

  RawAllocate raw_allocate_;
  RawFree raw_free_;
  mutable std::mutex mutex_;
  std::vector<Idle> idle_;
  std::map<size_t, uint64_t> last_asked_;  // size -> the number of the allocation that last asked for it
  uint64_t allocations_ = 0;
  size_t idle_bytes_ = 0, in_use_bytes_ = 0, peak_in_use_bytes_ = 0;
  size_t raw_allocations_ = 0, raw_frees_ = 0;
};

// A std::allocator that takes its memory from a HostMemory, or from the heap without one.
template <class T>
struct HostAllocator {
  using value_type = T;
  // A vector moved into another takes its memory's allocator along (else a vector made empty on the
  // heap would copy a pinned one's elements into heap memory).
  using propagate_on_container_move_assignment = std::true_type;
  using propagate_on_container_swap = std::true_type;
  HostMemory* memory = nullptr;

  HostAllocator() = default;
  explicit HostAllocator(HostMemory* m) : memory(m) {}
  template <class U>
  HostAllocator(const HostAllocator<U>& other) : memory(other.memory) {}
  T* allocate(size_t n) {
    if (!memory) return static_cast<T*>(::operator new(n * sizeof(T)));
    return static_cast<T*>(memory->allocate(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) {
    if (!memory) return ::operator delete(p);
    memory->release(p, n * sizeof(T));
  }
  template <class U>
  bool operator==(const HostAllocator<U>& other) const { return memory == other.memory; }
};

using HostFloats = std::vector<float, HostAllocator<float>>;

}  // namespace sb::models
