#pragma once
// Memory whose contents do not outlive one call: one buffer, grown to the largest size ever asked
// for and kept, so that every shape and batch size shares it instead of each holding its own.
// Whoever hands it out must make sure that a call has finished with it before the next begins.
#include <cstddef>
#include <memory>
#include <string>

#include "common/check.hpp"
#include "models/zeroed_host_block.hpp"

namespace sb::models {

class ScratchBuffer {
 public:
  static constexpr size_t kAlignment = kHostBlockAlignment;

  // At least `bytes` of it, aligned. What it held before is lost when it has to grow.
  void* at_least(size_t bytes) {
    if (bytes > bytes_) {
      const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
      data_.reset();  // free first: the old contents are not kept, so never hold both
      bytes_ = 0;
      data_ = zeroed_host_block(rounded);
      SB_CHECK(data_ != nullptr, "out of memory growing scratch to " + std::to_string(rounded) + " bytes");
      bytes_ = rounded;
    }
    return data_.get();
  }

  size_t bytes() const { return bytes_; }

 private:
  std::shared_ptr<void> data_;
  size_t bytes_ = 0;
};

}  // namespace sb::models
