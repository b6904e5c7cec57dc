#pragma once
// A device array that owns its memory (CUDA builds only): the persistent buffers of the device
// compressors and of the compressed allreduce, kept from one call to the next.
#include <cuda_runtime.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "common/cuda_check.hpp"

namespace sb {

template <class T>
class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(size_t size) { resize(size); }
  ~DeviceArray() {
    if (data_) cudaFree(data_);
  }
  DeviceArray(DeviceArray&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  DeviceArray& operator=(DeviceArray other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    return *this;
  }

  // Exactly `size` elements; the contents are lost when the size changes.
  void resize(size_t size) {
    if (size == size_) return;
    *this = DeviceArray();
    if (size) SB_CUDA_CHECK(cudaMalloc(&data_, size * sizeof(T)));
    size_ = size;
  }
  // At least `size` elements (grows only); the contents are lost when it grows.
  void reserve(size_t size) {
    if (size > size_) resize(size);
  }
  // Exactly the host's elements, copied (synchronously) to the device.
  void assign(const std::vector<T>& host) {
    resize(host.size());
    if (!host.empty()) SB_CUDA_CHECK(cudaMemcpy(data_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  T* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace sb
