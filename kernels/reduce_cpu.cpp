#include "kernels/reduce.hpp"

namespace sb {

void reduce_into_cpu(void* accumulator, const void* input, size_t count, DataType type,
                     RedOp op) {
  dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    T* acc = static_cast<T*>(accumulator);
    const T* in = static_cast<const T*>(input);
    dispatch_op(op, [&](auto op_tag) {
      for (size_t i = 0; i < count; ++i) acc[i] = combine(op_tag.value, acc[i], in[i]);
    });
  });
}

void reduce_cpu(void* out, const void* a, const void* b, size_t count, DataType type, RedOp op) {
  dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    T* result = static_cast<T*>(out);
    const T* x = static_cast<const T*>(a);
    const T* y = static_cast<const T*>(b);
    dispatch_op(op, [&](auto op_tag) {
      for (size_t i = 0; i < count; ++i) result[i] = combine(op_tag.value, x[i], y[i]);
    });
  });
}

void divide_cpu(void* buffer, size_t count, DataType type, int divisor) {
  dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    T* values = static_cast<T*>(buffer);
    for (size_t i = 0; i < count; ++i) values[i] = divide(values[i], divisor);
  });
}

}  // namespace sb
