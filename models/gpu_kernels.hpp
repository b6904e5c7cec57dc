#pragma once
// The CUDA kernels of the cuDNN backend (models/cudnn_backend_cuda.cpp) for everything cuDNN and
// cuBLAS do not do for it: element-wise ops, batch norm with its ReLU and a residual add fused,
// pooling, the loss and the optimizer step. Every tensor is channels-last, so "rows x channels" below is N*H*W rows of
// C contiguous values. Operands carry their element type (Elements) and are read and written as
// fp32 whatever it is, so one kernel serves fp32, fp16 and bf16 tensors and any mixture of them
// (an fp16 activation with fp32 batch-norm statistics). The arithmetic is the same element
// functions the CPU backends run (models/optimizer_math.hpp; models/loss_math.hpp's definition).
// Every launcher queues work on `stream` and returns at once, except where it says it waits.
#include <cstddef>
#include <cstdint>
#include <vector>

struct CUstream_st;  // cudaStream_t, without the CUDA headers

namespace sb::models::gpu {

enum class ElementType : uint8_t { f32, f16, bf16 };
size_t element_size(ElementType type);
const char* element_name(ElementType type);

// A device array and the type of its elements.
struct Elements {
  void* data = nullptr;
  ElementType type = ElementType::f32;
};

using Stream = CUstream_st*;

// ---- element-wise (gpu_elementwise_cuda.cu) ----------------------------------------------------
void fill(Elements y, size_t count, float value, Stream stream);
// y = a * x + b * y; with b == 0, y's old values are not read (so NaNs there do not leak through).
void axpby(float a, Elements x, float b, Elements y, size_t count, Stream stream);
void add(Elements a, Elements b, Elements y, size_t count, Stream stream);
void convert(Elements x, Elements y, size_t count, Stream stream);  // y = x, any types
void relu_forward(Elements x, Elements y, size_t count, Stream stream);
void relu_backward(Elements y, Elements dy, Elements dx, size_t count, Stream stream);
// Layout changes at the model's edges (Backend::write/read): fp32 NCHW <-> channels-last, with the
// conversion to or from the tensor's type in the same pass.
void nchw_to_channels_last(const float* nchw, Elements y, int64_t n, int64_t c, int64_t plane, Stream stream);
void channels_last_to_nchw(Elements x, float* nchw, int64_t n, int64_t c, int64_t plane, Stream stream);
// Error feedback for a narrowing copy: v = x + residual; y = v rounded to y's type; residual =
// v - y, in fp32 (what the rounding dropped is carried into the next step).
void convert_with_feedback(Elements x, float* residual, Elements y, size_t count, Stream stream);
// sum of x^2 in double; waits for the stream.
double sum_of_squares(Elements x, size_t count, Stream stream);
// The sums of squares of several arrays (x[i] of counts[i] elements), queued together; waits once.
std::vector<double> sums_of_squares(const std::vector<Elements>& x, const std::vector<size_t>& counts, Stream stream);
// The same into sums[i] on the device, as fp32; nothing waits.
void sums_of_squares_into(const std::vector<Elements>& x, const std::vector<size_t>& counts, float* sums,
                          Stream stream);
// *flag = 1 when every element of every array is finite, else 0; nothing waits.
void all_finite_into(const std::vector<Elements>& x, const std::vector<size_t>& counts, float* flag, Stream stream);
// x *= *factor, the factor read from the device when the kernel runs.
void scale_by(Elements x, size_t count, const float* factor, Stream stream);
// y[r, c] += bias[c] over rows x channels.
void add_bias(Elements y, Elements bias, size_t rows, size_t channels, Stream stream);

// One momentum step per element (models/optimizer_math.hpp), in fp32: w and v are fp32 (the master
// copies), g is read with its own type and multiplied by grad_scale first. When w_copy.data is
// set, the new weights are also written there in its type (the 16-bit copy the math reads).
struct MomentumArgs {
  float lr, momentum, momentum_scale, weight_decay, grad_scale;
  bool nesterov;
  // Device (lr, grad_scale, apply, momentum_scale), read by the kernel instead of the fields when
  // set; apply == 0 leaves w and v as they are (MomentumStep::rates, step_rate).
  const float* rates = nullptr;
  const float* trust_norms = nullptr;  // LARS: device (|w|^2, |g|^2) of this tensor; lr times its trust ratio
  float trust_eta = 0;
};
void momentum_update(float* w, Elements w_copy, Elements g, float* v, size_t count, const MomentumArgs& args,
                     Stream stream);

// ---- reductions over rows, per channel (gpu_batchnorm_cuda.cu) ---------------------------------
// sum[c] = sum_r x[r, c] into fp32 (the fully-connected bias gradient).
void channel_sum(Elements x, Elements sum, size_t rows, size_t channels, Stream stream);

// ---- batch norm (gpu_batchnorm_cuda.cu) -----------------------------------------------------------
// The batch's mean and biased variance per channel, accumulated in double.
void batchnorm_statistics(Elements x, Elements mean, Elements variance, size_t rows, size_t channels,
                          Stream stream);
// y = gamma (x - mean) / sqrt(variance + epsilon) + beta, plus residual when residual.data is set
// (same shape as x), then max(0, .) when relu.
void batchnorm_apply(Elements x, Elements gamma, Elements beta, Elements mean, Elements variance, Elements residual,
                     Elements y, size_t rows, size_t channels, float epsilon, bool relu, Stream stream);
// dx, dgamma, dbeta from the batch statistics; y (or data == nullptr without a fused ReLU) masks dy.
void batchnorm_backward(Elements x, Elements dy, Elements y, Elements gamma, Elements mean, Elements variance,
                        Elements dx, Elements dgamma, Elements dbeta, size_t rows, size_t channels, float epsilon,
                        Stream stream);

// ---- pooling (gpu_pooling_cuda.cu) -----------------------------------------------------------------
struct PoolShape {
  int64_t n, c, h, w;  // input
  int64_t p, q;        // output height, width
  int kernel, stride, pad;
};
// Padding never wins; ties go to the first maximum of the window in row-major order, as the CPU
// backends break them, so the backward pass routes each dy to the same input.
void maxpool_forward(Elements x, Elements y, const PoolShape& shape, Stream stream);
void maxpool_backward(Elements x, Elements dy, Elements dx, const PoolShape& shape, Stream stream);
void global_avgpool_forward(Elements x, Elements y, int64_t n, int64_t plane, int64_t c, Stream stream);
void global_avgpool_backward(Elements dy, Elements dx, int64_t n, int64_t plane, int64_t c, Stream stream);

// ---- loss (gpu_loss_cuda.cu) ------------------------------------------------------------------------
// Softmax cross-entropy with label smoothing over rows of logits (models/loss_math.hpp), row by
// row in double; labels is a device array of rows int32 values. The mean loss goes to *loss on
// the device, the rows added in a fixed order (the same bits every run); nothing waits.
void softmax_cross_entropy(Elements logits, const int32_t* labels, Elements grad, float* loss, int64_t rows,
                           int64_t classes, double smoothing, Stream stream);

}  // namespace sb::models::gpu
