#pragma once
// The cuDNN backend's inside, shared by its two source files (cudnn_backend_cuda.cpp: tensors and
// every op but convolution; cudnn_convolution_cuda.cpp: convolutions). CUDA builds only.
#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>

#include "common/cudnn_check.hpp"
#include "models/cudnn_backend.hpp"
#include "models/gpu_kernels.hpp"

namespace sb::models {

// What a Tensor of this backend points to: the device array, its element type, and for a tensor
// the optimizer updates under 16-bit precision, the fp32 master copy (authoritative when set).
struct DeviceTensor {
  void* data = nullptr;
  gpu::ElementType type = gpu::ElementType::f32;
  float* master = nullptr;

  ~DeviceTensor();
};

inline DeviceTensor& storage(const Tensor& t) { return *static_cast<DeviceTensor*>(t.data()); }
inline gpu::Elements elements(const Tensor& t) { return {storage(t).data, storage(t).type}; }
// The tensor's value as the optimizer sees it: the master copy when there is one.
inline gpu::Elements value_elements(const Tensor& t) {
  const DeviceTensor& d = storage(t);
  return d.master ? gpu::Elements{d.master, gpu::ElementType::f32} : gpu::Elements{d.data, d.type};
}

// One convolution shape's descriptors and the algorithm chosen for each direction.
struct ConvPlan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t forward_algo{};
  cudnnConvolutionBwdDataAlgo_t backward_data_algo{};
  cudnnConvolutionBwdFilterAlgo_t backward_filter_algo{};
  cudnnMathType_t forward_math{}, backward_data_math{}, backward_filter_math{};
  size_t forward_bytes = 0, backward_data_bytes = 0, backward_filter_bytes = 0;
  bool backward_chosen = false;  // the backward algorithms are chosen on first use (not for inference)

  ~ConvPlan();
};

struct CudnnState {
  CudnnOptions options;
  int device = 0;
  cudaStream_t stream = nullptr;
  cudnnHandle_t cudnn = nullptr;
  cublasHandle_t cublas = nullptr;
  gpu::ElementType compute = gpu::ElementType::f32;  // the storage type of non-vector tensors

  void* workspace = nullptr;  // grown to the largest chosen algorithm's need, within the bound
  size_t workspace_bytes = 0;
  int32_t* labels = nullptr;  // device copy of the loss's labels
  size_t labels_capacity = 0;
  std::unordered_map<std::string, std::unique_ptr<ConvPlan>> conv_plans;
  std::unique_ptr<CachingHostMemory> pinned;  // the loader's batches: page-locked, cached by size

  // The next batch's copy (prefetch): on its own stream into a device buffer of its own, which
  // write() then reads when asked for the same span or a slice of it. `staged` is recorded when
  // the copy is done, `consumed` when write() has read the buffer (the next copy waits for it).
  cudaStream_t copy_stream = nullptr;
  float* prefetch_buffer = nullptr;
  size_t prefetch_capacity = 0;  // floats
  std::span<const float> prefetched;  // the host span copied, or empty
  cudaEvent_t staged = nullptr, consumed = nullptr;

  // A captured step (begin_capture .. end_capture), instantiated; replay() launches it.
  bool capturing = false;
  cudaGraphExec_t step_graph = nullptr;

  // The most device memory seen in use (cudaMemGetInfo), and the sampling that keeps it. The
  // stream-ordered pool keeps what it has grown to (see the constructor), so a sample at the end
  // of a step still counts the scratch that the step freed.
  int64_t peak_device_bytes = 0;
  void sample_device_memory();

  // Whether a buffer may be (re)allocated now: not while capturing, when the recording would keep
  // an address that the next growth frees. Throws std::logic_error saying what grew.
  void require_not_capturing(const char* what) const;

  void* workspace_of(size_t bytes);
  // The operand as a contiguous array of `type`: the tensor itself, or a converted copy in
  // stream-ordered scratch that release() frees.
  gpu::Elements as_type(const Tensor& t, gpu::ElementType type);
  void release(const gpu::Elements& maybe_scratch, const Tensor& t);
};

cudnnDataType_t cudnn_type(gpu::ElementType type);

}  // namespace sb::models
