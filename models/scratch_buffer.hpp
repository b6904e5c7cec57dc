#pragma once
// Memory whose contents do not outlive one call: one buffer, grown to the largest size ever asked
// for and kept, so that every shape and batch size shares it instead of each holding its own.
// Whoever hands it out must make sure that a call has finished with it before the next begins.
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>

namespace sb::models {

class ScratchBuffer {
 public:
  static constexpr size_t kAlignment = 64;  // a cache line; what vector loads and oneDNN want

  // At least `bytes` of it, aligned. What it held before is lost when it has to grow.
  void* at_least(size_t bytes) {
    if (bytes > bytes_) {
      const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
      data_.reset();  // free first: the old contents are not kept, so never hold both
      data_.reset(std::aligned_alloc(kAlignment, rounded));
      if (!data_) {
        bytes_ = 0;
        throw std::bad_alloc();
      }
      bytes_ = rounded;
    }
    return data_.get();
  }

  size_t bytes() const { return bytes_; }

 private:
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> data_;
  size_t bytes_ = 0;
};

}  // namespace sb::models
