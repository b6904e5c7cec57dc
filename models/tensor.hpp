#pragma once
// A tensor as the model code sees it: a logical NCHW shape and storage owned by a Backend. The
// model never touches the elements: where they live (host or device memory), in which element
// type (fp32, or double in the reference backend) and in which layout (NCHW, NHWC) is the
// backend's choice, and data crosses to the host only through Backend::write / Backend::read,
// always as fp32 in NCHW order.
#include <cstdint>
#include <memory>
#include <string>

namespace sb::models {

// 4-D logical shape. Matrices are (rows, cols, 1, 1); vectors (per-channel) are (1, C, 1, 1).
struct Shape {
  int64_t n = 0, c = 0, h = 1, w = 1;
  int64_t count() const { return n * c * h * w; }
  bool operator==(const Shape&) const = default;
  std::string str() const;
};

inline Shape vector_shape(int64_t c) { return {1, c, 1, 1}; }

class Tensor {
 public:
  Tensor() = default;
  Tensor(Shape shape, std::shared_ptr<void> storage) : shape_(shape), storage_(std::move(storage)) {}

  const Shape& shape() const { return shape_; }
  int64_t count() const { return shape_.count(); }
  bool empty() const { return storage_ == nullptr; }
  // The backend's own pointer to the first element; only the backend that made it interprets it.
  void* data() const { return storage_.get(); }
  template <class T>
  T* as() const { return static_cast<T*>(storage_.get()); }
  // The storage itself, for holders that must see whether it is still alive (a recorded step).
  const std::shared_ptr<void>& storage() const { return storage_; }

 private:
  Shape shape_;
  std::shared_ptr<void> storage_;
};

}  // namespace sb::models
