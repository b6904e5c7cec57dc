// The cuDNN backend's convolutions: channels-last descriptors per shape, one algorithm per
// direction chosen once (heuristics or timing, within the workspace bound) and cached.
#include <string>

#include "common/cuda_check.hpp"
#include "models/cudnn_state.hpp"

namespace sb::models {

ConvPlan::~ConvPlan() {
  if (x) cudnnDestroyTensorDescriptor(x);
  if (y) cudnnDestroyTensorDescriptor(y);
  if (w) cudnnDestroyFilterDescriptor(w);
  if (conv) cudnnDestroyConvolutionDescriptor(conv);
}

namespace {

// fp32 runs on FMA kernels only (no TF32); tf32 lets cuDNN use TF32 tensor cores on fp32 data;
// 16-bit data runs on tensor cores, accumulating in fp32 (the descriptor's compute type).
cudnnMathType_t math_type(Precision precision) {
  switch (precision) {
    case Precision::fp32: return CUDNN_FMA_MATH;
    case Precision::tf32: return CUDNN_DEFAULT_MATH;
    default: return CUDNN_TENSOR_OP_MATH;
  }
}

// The first (fastest by cuDNN's ranking, or by measured time) algorithm that succeeded and fits;
// under strict fp32, only one that runs on FMA units (no tensor-core math of any kind). A
// deterministic one is preferred (some backward-filter algorithms add with atomics, which would
// make two runs, and a resumed run, differ in the last bits); the fastest of the others only
// when cuDNN offers no deterministic one within the bounds.
template <class Perf>
const Perf& pick(const Perf* perf, int count, size_t limit, bool strict_fp32, const char* direction,
                 const std::string& shape) {
  const Perf* fallback = nullptr;
  for (int i = 0; i < count; ++i) {
    const bool tensor_cores = perf[i].mathType == CUDNN_TENSOR_OP_MATH ||
                              perf[i].mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
    if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > limit || (strict_fp32 && tensor_cores)) continue;
    if (perf[i].determinism == CUDNN_DETERMINISTIC) return perf[i];
    if (!fallback) fallback = &perf[i];
  }
  if (fallback) return *fallback;
  die(__FILE__, __LINE__,
      std::string("cuDNN offers no ") + direction + " convolution algorithm within the workspace bound for " + shape);
}

std::string plan_key(const Shape& x, const Shape& w, ConvGeometry g) {
  return x.str() + "*" + w.str() + "/s" + std::to_string(g.stride) + "p" + std::to_string(g.pad);
}

}  // namespace

// The plan of this shape, made on first use with its forward algorithm chosen.
ConvPlan& conv_plan(CudnnState& s, const Tensor& x, const Tensor& w, const Tensor& y, ConvGeometry g) {
  const Shape &xs = x.shape(), &ws = w.shape(), &ys = y.shape();
  SB_CHECK(xs.c == ws.c && ys.c == ws.n && ys.n == xs.n &&
               ys.h == window_output(xs.h, static_cast<int>(ws.h), g.stride, g.pad) &&
               ys.w == window_output(xs.w, static_cast<int>(ws.w), g.stride, g.pad),
           "conv shapes " + xs.str() + " " + ws.str() + " " + ys.str());
  const std::string key = plan_key(xs, ws, g);
  auto found = s.conv_plans.find(key);
  if (found != s.conv_plans.end()) return *found->second;
  s.require_not_capturing("choosing a convolution's algorithm");

  auto plan = std::make_unique<ConvPlan>();
  const cudnnDataType_t type = cudnn_type(s.compute);
  auto dim = [](int64_t v) { return static_cast<int>(v); };
  SB_CUDNN_CHECK(cudnnCreateTensorDescriptor(&plan->x));
  SB_CUDNN_CHECK(cudnnCreateTensorDescriptor(&plan->y));
  SB_CUDNN_CHECK(cudnnCreateFilterDescriptor(&plan->w));
  SB_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&plan->conv));
  SB_CUDNN_CHECK(cudnnSetTensor4dDescriptor(plan->x, CUDNN_TENSOR_NHWC, type, dim(xs.n), dim(xs.c), dim(xs.h), dim(xs.w)));
  SB_CUDNN_CHECK(cudnnSetTensor4dDescriptor(plan->y, CUDNN_TENSOR_NHWC, type, dim(ys.n), dim(ys.c), dim(ys.h), dim(ys.w)));
  SB_CUDNN_CHECK(cudnnSetFilter4dDescriptor(plan->w, type, CUDNN_TENSOR_NHWC, dim(ws.n), dim(ws.c), dim(ws.h), dim(ws.w)));
  SB_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(plan->conv, g.pad, g.pad, g.stride, g.stride, 1, 1,
                                                 CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  SB_CUDNN_CHECK(cudnnSetConvolutionMathType(plan->conv, math_type(s.options.precision)));

  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int count = 0;
  if (s.options.timed_search) {
    gpu::Elements xe = s.as_type(x, s.compute), we = s.as_type(w, s.compute), ye = s.as_type(y, s.compute);
    SB_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
        s.cudnn, plan->x, xe.data, plan->w, we.data, plan->conv, plan->y, ye.data, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
        &count, perf, s.workspace_of(s.options.workspace_limit), s.options.workspace_limit));
    s.release(xe, x), s.release(we, w), s.release(ye, y);
  } else {
    SB_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(s.cudnn, plan->x, plan->w, plan->conv, plan->y,
                                                          CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, perf));
  }
  const bool strict = s.options.precision == Precision::fp32;
  const auto& best = pick(perf, count, s.options.workspace_limit, strict, "forward", key);
  plan->forward_algo = best.algo;
  plan->forward_math = strict ? CUDNN_FMA_MATH : best.mathType;
  plan->forward_bytes = best.memory;
  return *s.conv_plans.emplace(key, std::move(plan)).first->second;
}

// The backward algorithms, chosen on the first backward pass of the shape.
void choose_backward(CudnnState& s, ConvPlan& plan, const std::string& key) {
  if (plan.backward_chosen) return;
  s.require_not_capturing("choosing a convolution's backward algorithms");
  cudnnConvolutionBwdDataAlgoPerf_t data_perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
  cudnnConvolutionBwdFilterAlgoPerf_t filter_perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
  int data_count = 0, filter_count = 0;
  // The timed search needs buffers of the right sizes only, not the layer's data: scratch.
  if (s.options.timed_search) {
    size_t x_bytes = 0, y_bytes = 0, w_bytes = 0;
    SB_CUDNN_CHECK(cudnnGetTensorSizeInBytes(plan.x, &x_bytes));
    SB_CUDNN_CHECK(cudnnGetTensorSizeInBytes(plan.y, &y_bytes));
    SB_CUDNN_CHECK(cudnnGetFilterSizeInBytes(plan.w, &w_bytes));
    void *x = nullptr, *y = nullptr, *w = nullptr;
    SB_CUDA_CHECK(cudaMallocAsync(&x, x_bytes, s.stream));
    SB_CUDA_CHECK(cudaMallocAsync(&y, y_bytes, s.stream));
    SB_CUDA_CHECK(cudaMallocAsync(&w, w_bytes, s.stream));
    SB_CUDA_CHECK(cudaMemsetAsync(x, 0, x_bytes, s.stream));
    SB_CUDA_CHECK(cudaMemsetAsync(y, 0, y_bytes, s.stream));
    SB_CUDA_CHECK(cudaMemsetAsync(w, 0, w_bytes, s.stream));
    void* workspace = s.workspace_of(s.options.workspace_limit);
    SB_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(s.cudnn, plan.w, w, plan.y, y, plan.conv, plan.x, x,
                                                               CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &data_count,
                                                               data_perf, workspace, s.options.workspace_limit));
    SB_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(s.cudnn, plan.x, x, plan.y, y, plan.conv, plan.w, w,
                                                                 CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &filter_count,
                                                                 filter_perf, workspace, s.options.workspace_limit));
    SB_CUDA_CHECK(cudaFreeAsync(x, s.stream));
    SB_CUDA_CHECK(cudaFreeAsync(y, s.stream));
    SB_CUDA_CHECK(cudaFreeAsync(w, s.stream));
  } else {
    SB_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(s.cudnn, plan.w, plan.y, plan.conv, plan.x,
                                                               CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &data_count,
                                                               data_perf));
    SB_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(s.cudnn, plan.x, plan.y, plan.conv, plan.w,
                                                                 CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &filter_count,
                                                                 filter_perf));
  }
  const bool strict = s.options.precision == Precision::fp32;
  const auto& data = pick(data_perf, data_count, s.options.workspace_limit, strict, "backward-data", key);
  plan.backward_data_algo = data.algo;
  plan.backward_data_math = strict ? CUDNN_FMA_MATH : data.mathType;
  plan.backward_data_bytes = data.memory;
  const auto& filter = pick(filter_perf, filter_count, s.options.workspace_limit, strict, "backward-filter", key);
  plan.backward_filter_algo = filter.algo;
  plan.backward_filter_math = strict ? CUDNN_FMA_MATH : filter.mathType;
  plan.backward_filter_bytes = filter.memory;
  plan.backward_chosen = true;
}

void CudnnBackend::conv_forward(const Tensor& x, const Tensor& w, Tensor& y, ConvGeometry g) {
  CudnnState& s = *state_;
  ConvPlan& plan = conv_plan(s, x, w, y, g);
  const gpu::Elements xe = s.as_type(x, s.compute), we = s.as_type(w, s.compute), ye = s.as_type(y, s.compute);
  const float one = 1, zero = 0;
  SB_CUDNN_CHECK(cudnnSetConvolutionMathType(plan.conv, plan.forward_math));
  SB_CUDNN_CHECK(cudnnConvolutionForward(s.cudnn, &one, plan.x, xe.data, plan.w, we.data, plan.conv, plan.forward_algo,
                                         s.workspace_of(plan.forward_bytes), plan.forward_bytes, &zero, plan.y,
                                         ye.data));
  if (ye.data != storage(y).data) gpu::convert(ye, elements(y), static_cast<size_t>(y.count()), s.stream);
  s.release(xe, x), s.release(we, w), s.release(ye, y);
}

void CudnnBackend::conv_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx, ConvGeometry g) {
  CudnnState& s = *state_;
  ConvPlan& plan = conv_plan(s, dx, w, dy, g);
  choose_backward(s, plan, plan_key(dx.shape(), w.shape(), g));
  const gpu::Elements dye = s.as_type(dy, s.compute), we = s.as_type(w, s.compute), dxe = s.as_type(dx, s.compute);
  const float one = 1, zero = 0;
  SB_CUDNN_CHECK(cudnnSetConvolutionMathType(plan.conv, plan.backward_data_math));
  SB_CUDNN_CHECK(cudnnConvolutionBackwardData(s.cudnn, &one, plan.w, we.data, plan.y, dye.data, plan.conv,
                                              plan.backward_data_algo, s.workspace_of(plan.backward_data_bytes),
                                              plan.backward_data_bytes, &zero, plan.x, dxe.data));
  if (dxe.data != storage(dx).data) gpu::convert(dxe, elements(dx), static_cast<size_t>(dx.count()), s.stream);
  s.release(dye, dy), s.release(we, w), s.release(dxe, dx);
}

void CudnnBackend::conv_backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, ConvGeometry g) {
  CudnnState& s = *state_;
  ConvPlan& plan = conv_plan(s, x, dw, dy, g);
  choose_backward(s, plan, plan_key(x.shape(), dw.shape(), g));
  const gpu::Elements xe = s.as_type(x, s.compute), dye = s.as_type(dy, s.compute), dwe = s.as_type(dw, s.compute);
  const float one = 1, zero = 0;
  SB_CUDNN_CHECK(cudnnSetConvolutionMathType(plan.conv, plan.backward_filter_math));
  SB_CUDNN_CHECK(cudnnConvolutionBackwardFilter(s.cudnn, &one, plan.x, xe.data, plan.y, dye.data, plan.conv,
                                                plan.backward_filter_algo, s.workspace_of(plan.backward_filter_bytes),
                                                plan.backward_filter_bytes, &zero, plan.w, dwe.data));
  if (dwe.data != storage(dw).data) gpu::convert(dwe, elements(dw), static_cast<size_t>(dw.count()), s.stream);
  s.release(xe, x), s.release(dye, dy), s.release(dwe, dw);
}

}  // namespace sb::models
