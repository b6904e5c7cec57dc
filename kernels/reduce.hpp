#pragma once
// Element-wise reduction of one buffer into another, for every DataType and RedOp. The element
// function is shared by the CPU loop here and the CUDA kernels of the GPU transports. fp16 and
// bf16 are combined in fp32 and rounded once per step, as NCCL does for its reductions.
#include <cstddef>
#include <type_traits>

#include "kernels/dtype.hpp"

#if SB_HAVE_CUDA
struct CUstream_st;  // cudaStream_t, without the CUDA headers
#endif

namespace sb {

// The type integer arithmetic is done in: unsigned, so that overflow wraps.
template <class T, bool = std::is_integral_v<T>>
struct wrapping_arith { using type = T; };
template <class T>
struct wrapping_arith<T, true> { using type = std::make_unsigned_t<T>; };

template <class T>
SB_HD T combine(RedOp op, T a, T b) {
  // Integer sums and products wrap around (as MPI's and NCCL's do) instead of overflowing into
  // undefined behaviour: the timed in-place iterations keep reducing their own results.
  using Arith = typename wrapping_arith<T>::type;
  switch (op) {
    case RedOp::sum:
    case RedOp::avg:  // avg divides once, at the end
      return static_cast<T>(static_cast<Arith>(static_cast<Arith>(a) + static_cast<Arith>(b)));
    case RedOp::prod:
      return static_cast<T>(static_cast<Arith>(static_cast<Arith>(a) * static_cast<Arith>(b)));
    case RedOp::max: return a < b ? b : a;
    case RedOp::min: return b < a ? b : a;
  }
  return a;
}
SB_HD float16 combine(RedOp op, float16 a, float16 b) {
  return to_float16(combine(op, to_float(a), to_float(b)));
}
SB_HD bfloat16 combine(RedOp op, bfloat16 a, bfloat16 b) {
  return to_bfloat16(combine(op, to_float(a), to_float(b)));
}

// The last step of avg: the sum divided by the number of contributions (integer division for
// integer types, as NCCL defines ncclAvg).
template <class T>
SB_HD T divide(T sum, int divisor) {
  return static_cast<T>(sum / static_cast<T>(divisor));
}
SB_HD float16 divide(float16 sum, int divisor) {
  return to_float16(to_float(sum) / static_cast<float>(divisor));
}
SB_HD bfloat16 divide(bfloat16 sum, int divisor) {
  return to_bfloat16(to_float(sum) / static_cast<float>(divisor));
}

// Calls f(std::integral_constant<RedOp, op>{}): the op becomes a compile-time constant, so that
// the loops over elements have no switch inside and vectorise.
template <class F>
decltype(auto) dispatch_op(RedOp op, F&& f) {
  switch (op) {
    case RedOp::sum: return f(std::integral_constant<RedOp, RedOp::sum>{});
    case RedOp::prod: return f(std::integral_constant<RedOp, RedOp::prod>{});
    case RedOp::max: return f(std::integral_constant<RedOp, RedOp::max>{});
    case RedOp::min: return f(std::integral_constant<RedOp, RedOp::min>{});
    case RedOp::avg: break;
  }
  return f(std::integral_constant<RedOp, RedOp::avg>{});
}

// accumulator[i] = combine(op, accumulator[i], input[i]) for i < count, on host memory.
void reduce_into_cpu(void* accumulator, const void* input, size_t count, DataType type, RedOp op);
// out[i] = combine(op, a[i], b[i]): a reduction that also moves the data where it belongs (the
// shm transport reduces a peer's input and its own into its result in one pass).
void reduce_cpu(void* out, const void* a, const void* b, size_t count, DataType type, RedOp op);
// buffer[i] = divide(buffer[i], divisor): finishes an avg computed as a sum.
void divide_cpu(void* buffer, size_t count, DataType type, int divisor);

#if SB_HAVE_CUDA
// The same on device memory, enqueued on `stream` (kernels/reduce_cuda.cu).
void reduce_into_cuda(void* accumulator, const void* input, size_t count, DataType type, RedOp op,
                      CUstream_st* stream);
void divide_cuda(void* buffer, size_t count, DataType type, int divisor, CUstream_st* stream);
#endif

}  // namespace sb
