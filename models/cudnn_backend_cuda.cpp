// The cuDNN backend (models/cudnn_backend.hpp): device tensors, and every op but the convolutions
// (cudnn_convolution_cuda.cpp). cuBLAS runs the fully-connected layer; the rest are the kernels
// of models/gpu_kernels.hpp.
#include "models/cudnn_backend.hpp"

#include <algorithm>
#include <functional>
#include <stdexcept>

#include "common/cuda_check.hpp"
#include "common/usage_error.hpp"
#include "models/cudnn_state.hpp"

namespace sb::models {

using gpu::Elements;
using gpu::ElementType;

DeviceTensor::~DeviceTensor() {
  // Frees may follow kernels still queued on the backend's stream: cudaFree waits for the device.
  if (data) cudaFree(data);
  if (master) cudaFree(master);
}

cudnnDataType_t cudnn_type(ElementType type) {
  switch (type) {
    case ElementType::f16: return CUDNN_DATA_HALF;
    case ElementType::bf16: return CUDNN_DATA_BFLOAT16;
    default: return CUDNN_DATA_FLOAT;
  }
}

void CudnnState::require_not_capturing(const char* what) const {
  if (capturing)
    throw std::logic_error(std::string(what) + " while capturing a step: run the step once uncaptured first");
}

void* CudnnState::workspace_of(size_t bytes) {
  if (bytes > workspace_bytes) {
    require_not_capturing("growing the convolution workspace");
    if (workspace) SB_CUDA_CHECK(cudaFreeAsync(workspace, stream));
    SB_CUDA_CHECK(cudaMallocAsync(&workspace, bytes, stream));
    workspace_bytes = bytes;
  }
  return workspace;
}

Elements CudnnState::as_type(const Tensor& t, ElementType type) {
  const Elements own = elements(t);
  if (own.type == type) return own;
  Elements copy{nullptr, type};
  SB_CUDA_CHECK(cudaMallocAsync(&copy.data, static_cast<size_t>(t.count()) * gpu::element_size(type), stream));
  gpu::convert(own, copy, static_cast<size_t>(t.count()), stream);
  return copy;
}

void CudnnState::release(const Elements& maybe_scratch, const Tensor& t) {
  if (maybe_scratch.data != storage(t).data) SB_CUDA_CHECK(cudaFreeAsync(maybe_scratch.data, stream));
}

namespace {

void require_same(const Tensor& a, const Tensor& b, const char* what) {
  SB_CHECK(a.shape() == b.shape(), std::string(what) + ": " + a.shape().str() + " vs " + b.shape().str());
}

size_t count_of(const Tensor& t) { return static_cast<size_t>(t.count()); }

// Per-channel vectors (1, C, 1, 1) stay fp32 under every precision: batch-norm parameters and
// statistics, the FC bias.
bool is_vector(const Shape& s) { return s.n == 1 && s.h == 1 && s.w == 1; }

}  // namespace

CudnnBackend::CudnnBackend(const CudnnOptions& options) : state_(std::make_unique<CudnnState>()) {
  CudnnState& s = *state_;
  s.options = options;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) throw UsageError("the cudnn backend needs a GPU; none is visible");
  if (options.device >= 0) SB_CUDA_CHECK(cudaSetDevice(options.device % devices));
  SB_CUDA_CHECK(cudaGetDevice(&s.device));
  // Scratch (staging copies, per-call sums, converted operands) comes from the stream-ordered
  // pool every step; keep what it has grown to instead of handing it back at each synchronisation.
  cudaMemPool_t pool = nullptr;
  SB_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, s.device));
  uint64_t keep_everything = UINT64_MAX;
  SB_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_everything));
  s.compute = options.precision == Precision::fp16   ? ElementType::f16
              : options.precision == Precision::bf16 ? ElementType::bf16
                                                     : ElementType::f32;
  SB_CUDA_CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
  SB_CUDNN_CHECK(cudnnCreate(&s.cudnn));
  SB_CUDNN_CHECK(cudnnSetStream(s.cudnn, s.stream));
  SB_CUBLAS_CHECK(cublasCreate(&s.cublas));
  SB_CUBLAS_CHECK(cublasSetStream(s.cublas, s.stream));
  SB_CUDA_CHECK(cudaStreamCreateWithFlags(&s.copy_stream, cudaStreamNonBlocking));
  SB_CUDA_CHECK(cudaEventCreateWithFlags(&s.staged, cudaEventDisableTiming));
  SB_CUDA_CHECK(cudaEventCreateWithFlags(&s.consumed, cudaEventDisableTiming));
  SB_CUDA_CHECK(cudaEventRecord(s.consumed, s.stream));  // the buffer starts free
}

CudnnBackend::~CudnnBackend() {
  CudnnState& s = *state_;
  end_capture(false);
  if (s.step_graph) cudaGraphExecDestroy(s.step_graph);
  cudaStreamSynchronize(s.stream);
  cudaStreamSynchronize(s.copy_stream);
  if (s.prefetch_buffer) cudaFree(s.prefetch_buffer);
  cudaEventDestroy(s.staged);
  cudaEventDestroy(s.consumed);
  cudaStreamDestroy(s.copy_stream);
  s.conv_plans.clear();
  if (s.workspace) cudaFree(s.workspace);
  if (s.labels) cudaFree(s.labels);
  s.pinned.reset();
  cublasDestroy(s.cublas);
  cudnnDestroy(s.cudnn);
  cudaStreamDestroy(s.stream);
}

Precision CudnnBackend::precision() const { return state_->options.precision; }
Elements CudnnBackend::device_elements(const Tensor& t) const { return elements(t); }
ElementType CudnnBackend::compute_type() const { return state_->compute; }
gpu::Stream CudnnBackend::stream() const { return state_->stream; }

std::string CudnnBackend::library_version() {
  const size_t v = cudnnGetVersion();  // major * 10000 + minor * 100 + patch since cuDNN 9
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

std::string CudnnBackend::device_name() const {
  cudaDeviceProp properties{};
  SB_CUDA_CHECK(cudaGetDeviceProperties(&properties, state_->device));
  return "cuda:" + std::to_string(state_->device) + " " + properties.name;
}

void CudnnState::sample_device_memory() {
  size_t free_bytes = 0, total_bytes = 0;
  SB_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  peak_device_bytes = std::max(peak_device_bytes, static_cast<int64_t>(total_bytes - free_bytes));
}

int64_t CudnnBackend::peak_device_bytes() {
  state_->sample_device_memory();
  return state_->peak_device_bytes;
}

void CudnnBackend::synchronize() {
  SB_CUDA_CHECK(cudaStreamSynchronize(state_->stream));
  state_->sample_device_memory();
}

// ---- captured steps -------------------------------------------------------------------------------

void CudnnBackend::begin_capture() {
  CudnnState& s = *state_;
  SB_CHECK(!s.capturing, "begin_capture() while a capture is open");
  // Thread-local mode: a call of this thread that would wait for the device (a read, a sum, a
  // synchronize) fails at once, instead of leaving a recording that does not do what ran.
  SB_CUDA_CHECK(cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeThreadLocal));
  s.capturing = true;
}

void CudnnBackend::end_capture(bool keep) {
  CudnnState& s = *state_;
  if (!s.capturing) {
    if (keep) throw std::logic_error("end_capture() without begin_capture()");
    return;
  }
  s.capturing = false;
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(s.stream, &graph);
  if (!keep) {  // a capture abandoned after an error: drop it, and the error it left
    if (graph) cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    return;
  }
  SB_CUDA_CHECK(ended);
  if (s.step_graph) {
    SB_CUDA_CHECK(cudaGraphExecDestroy(s.step_graph));
    s.step_graph = nullptr;
  }
  const cudaError_t made = cudaGraphInstantiate(&s.step_graph, graph, 0);
  cudaGraphDestroy(graph);
  SB_CUDA_CHECK(made);
}

void CudnnBackend::replay() {
  SB_CHECK(state_->step_graph, "replay() before a step was captured");
  SB_CHECK(!state_->capturing, "replay() while capturing");
  SB_CUDA_CHECK(cudaGraphLaunch(state_->step_graph, state_->stream));
}

bool CudnnBackend::capturing() const { return state_->capturing; }

namespace {
void* pinned_allocate(size_t bytes) {
  void* block = nullptr;
  return cudaHostAlloc(&block, bytes, cudaHostAllocDefault) == cudaSuccess ? block : nullptr;
}
// Called when the pool gives back a size a run has left (CachingHostMemory::release). cudaFreeHost
// may wait for the device, which a capturing thread must not do: the trainer releases batches and
// the recorded labels only outside a capture (a step's batch dies after the step's synchronize).
void pinned_free(void* block) { cudaFreeHost(block); }
}  // namespace

HostMemory* CudnnBackend::input_memory() {
  if (!state_->pinned) state_->pinned = std::make_unique<CachingHostMemory>(pinned_allocate, pinned_free);
  return state_->pinned.get();
}

// ---- tensors ------------------------------------------------------------------------------------

Tensor CudnnBackend::allocate(Shape shape) {
  SB_CHECK(shape.count() >= 0, "negative shape " + shape.str());
  state_->require_not_capturing("allocating a tensor");
  auto t = std::make_shared<DeviceTensor>();
  t->type = is_vector(shape) ? ElementType::f32 : state_->compute;
  const size_t bytes = static_cast<size_t>(std::max<int64_t>(shape.count(), 1)) * gpu::element_size(t->type);
  SB_CUDA_CHECK(cudaMalloc(&t->data, bytes));
  SB_CUDA_CHECK(cudaMemsetAsync(t->data, 0, bytes, state_->stream));
  state_->sample_device_memory();
  return Tensor(shape, std::shared_ptr<void>(t, t.get()));
}

void CudnnBackend::keep_fp32_master(Tensor& t) {
  DeviceTensor& d = storage(t);
  if (d.type == ElementType::f32 || d.master) return;
  state_->require_not_capturing("allocating a master copy");
  SB_CUDA_CHECK(cudaMalloc(&d.master, count_of(t) * sizeof(float)));
  state_->sample_device_memory();
  gpu::convert(elements(t), {d.master, ElementType::f32}, count_of(t), state_->stream);
}

// The host side only copies: the layout change and the rounding to 16 bits run on the device,
// from an fp32 NCHW staging copy (so a master, when there is one, gets the exact values).
void CudnnBackend::write(Tensor& t, std::span<const float> nchw) {
  SB_CHECK(static_cast<int64_t>(nchw.size()) == t.count(), "write size");
  CudnnState& s = *state_;
  const Shape& shape = t.shape();
  // A prefetched batch, or a slice of one (--accumulate's micro-batches), is on the device already
  // (or on its way): wait for its copy, not the host. std::less_equal orders any two pointers.
  const float* ahead = s.prefetched.data();
  const bool prefetched = !nchw.empty() && !s.prefetched.empty() && std::less_equal<const float*>{}(ahead, nchw.data()) &&
                          std::less_equal<const float*>{}(nchw.data() + nchw.size(), ahead + s.prefetched.size());
  float* staging = prefetched ? s.prefetch_buffer + (nchw.data() - ahead) : nullptr;
  if (prefetched) {
    SB_CUDA_CHECK(cudaStreamWaitEvent(s.stream, s.staged, 0));
  } else {
    SB_CUDA_CHECK(cudaMallocAsync(&staging, nchw.size() * sizeof(float), s.stream));
    SB_CUDA_CHECK(cudaMemcpyAsync(staging, nchw.data(), nchw.size() * sizeof(float), cudaMemcpyHostToDevice, s.stream));
  }
  gpu::nchw_to_channels_last(staging, elements(t), shape.n, shape.c, shape.h * shape.w, s.stream);
  if (DeviceTensor& d = storage(t); d.master)
    gpu::nchw_to_channels_last(staging, {d.master, ElementType::f32}, shape.n, shape.c, shape.h * shape.w, s.stream);
  if (prefetched) {
    // The host memory was read by the copy, which the stream has waited for; nothing to hold up.
    // The slices come in order: the one that ends the batch is its last, and after it the loader
    // may refill that memory, so a later write of it must copy afresh.
    SB_CUDA_CHECK(cudaEventRecord(s.consumed, s.stream));
    if (nchw.data() + nchw.size() == ahead + s.prefetched.size()) s.prefetched = {};
    return;
  }
  SB_CUDA_CHECK(cudaFreeAsync(staging, s.stream));
  SB_CUDA_CHECK(cudaStreamSynchronize(s.stream));  // the caller may reuse `nchw` on return
}

void CudnnBackend::prefetch(std::span<const float> nchw) {
  CudnnState& s = *state_;
  if (nchw.empty()) return;
  SB_CUDA_CHECK(cudaStreamWaitEvent(s.copy_stream, s.consumed, 0));  // the last batch staged is read
  if (s.prefetch_capacity < nchw.size()) {
    SB_CUDA_CHECK(cudaStreamSynchronize(s.copy_stream));
    if (s.prefetch_buffer) SB_CUDA_CHECK(cudaFree(s.prefetch_buffer));
    SB_CUDA_CHECK(cudaMalloc(&s.prefetch_buffer, nchw.size() * sizeof(float)));
    s.prefetch_capacity = nchw.size();
  }
  // From the loader's pinned pool this is a DMA that overlaps the compute stream's work.
  SB_CUDA_CHECK(cudaMemcpyAsync(s.prefetch_buffer, nchw.data(), nchw.size() * sizeof(float), cudaMemcpyHostToDevice,
                                s.copy_stream));
  SB_CUDA_CHECK(cudaEventRecord(s.staged, s.copy_stream));
  s.prefetched = nchw;
}

// The master when there is one, else the tensor's own elements, as fp32 NCHW.
void CudnnBackend::read(const Tensor& t, std::span<float> nchw) {
  SB_CHECK(static_cast<int64_t>(nchw.size()) == t.count(), "read size");
  CudnnState& s = *state_;
  const Shape& shape = t.shape();
  float* staging = nullptr;
  SB_CUDA_CHECK(cudaMallocAsync(&staging, nchw.size() * sizeof(float), s.stream));
  gpu::channels_last_to_nchw(value_elements(t), staging, shape.n, shape.c, shape.h * shape.w, s.stream);
  SB_CUDA_CHECK(cudaMemcpyAsync(nchw.data(), staging, nchw.size() * sizeof(float), cudaMemcpyDeviceToHost, s.stream));
  SB_CUDA_CHECK(cudaFreeAsync(staging, s.stream));
  SB_CUDA_CHECK(cudaStreamSynchronize(s.stream));
}

void CudnnBackend::fill(Tensor& t, float value) {
  gpu::fill(elements(t), count_of(t), value, state_->stream);
  if (DeviceTensor& d = storage(t); d.master) gpu::fill({d.master, ElementType::f32}, count_of(t), value, state_->stream);
}

void CudnnBackend::copy(const Tensor& from, Tensor& to) {
  require_same(from, to, "copy");
  gpu::convert(elements(from), elements(to), count_of(from), state_->stream);
  if (DeviceTensor& d = storage(to); d.master)
    gpu::convert(value_elements(from), {d.master, ElementType::f32}, count_of(from), state_->stream);
}

// ---- batch norm, activations, pooling ------------------------------------------------------------

namespace {
size_t rows_of(const Shape& s) { return static_cast<size_t>(s.n * s.h * s.w); }
void require_channels(const Tensor& x, const Tensor& v, const char* what) {
  SB_CHECK(v.shape() == vector_shape(x.shape().c), std::string(what) + " must be (1, C, 1, 1), got " + v.shape().str());
}
}  // namespace

void CudnnBackend::batchnorm_forward_training(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y,
                                              Tensor& mean, Tensor& variance, float epsilon, bool relu,
                                              const Tensor* residual) {
  require_same(x, y, "batchnorm y");
  if (residual) require_same(x, *residual, "batchnorm residual");
  for (const Tensor* v : {&gamma, &beta, static_cast<const Tensor*>(&mean), static_cast<const Tensor*>(&variance)})
    require_channels(x, *v, "batchnorm vector");
  const size_t rows = rows_of(x.shape()), channels = static_cast<size_t>(x.shape().c);
  gpu::batchnorm_statistics(elements(x), elements(mean), elements(variance), rows, channels, state_->stream);
  gpu::batchnorm_apply(elements(x), value_elements(gamma), value_elements(beta), elements(mean), elements(variance),
                       residual ? elements(*residual) : Elements{}, elements(y), rows, channels, epsilon, relu,
                       state_->stream);
}

void CudnnBackend::batchnorm_forward_inference(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                               const Tensor& mean, const Tensor& variance, Tensor& y, float epsilon,
                                               bool relu, const Tensor* residual) {
  require_same(x, y, "batchnorm y");
  if (residual) require_same(x, *residual, "batchnorm residual");
  for (const Tensor* v : {&gamma, &beta, &mean, &variance}) require_channels(x, *v, "batchnorm vector");
  gpu::batchnorm_apply(elements(x), value_elements(gamma), value_elements(beta), value_elements(mean),
                       value_elements(variance), residual ? elements(*residual) : Elements{}, elements(y),
                       rows_of(x.shape()), static_cast<size_t>(x.shape().c), epsilon, relu, state_->stream);
}

void CudnnBackend::batchnorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma, const Tensor& mean,
                                      const Tensor& variance, const Tensor* y, Tensor& dx, Tensor& dgamma,
                                      Tensor& dbeta, float epsilon) {
  require_same(x, dy, "batchnorm dy");
  require_same(x, dx, "batchnorm dx");
  if (y) require_same(x, *y, "batchnorm y");
  for (const Tensor* v : {&gamma, &mean, &variance, static_cast<const Tensor*>(&dgamma), static_cast<const Tensor*>(&dbeta)})
    require_channels(x, *v, "batchnorm vector");
  gpu::batchnorm_backward(elements(x), elements(dy), y ? elements(*y) : Elements{}, value_elements(gamma),
                          elements(mean), elements(variance), elements(dx), elements(dgamma), elements(dbeta),
                          rows_of(x.shape()), static_cast<size_t>(x.shape().c), epsilon, state_->stream);
}

void CudnnBackend::relu_forward(const Tensor& x, Tensor& y) {
  require_same(x, y, "relu");
  gpu::relu_forward(elements(x), elements(y), count_of(x), state_->stream);
}

void CudnnBackend::relu_backward(const Tensor& y, const Tensor& dy, Tensor& dx) {
  require_same(y, dy, "relu dy");
  require_same(y, dx, "relu dx");
  gpu::relu_backward(elements(y), elements(dy), elements(dx), count_of(y), state_->stream);
}

namespace {
gpu::PoolShape pool_shape(const Shape& xs, const Shape& ys, PoolGeometry g) {
  SB_CHECK(ys.n == xs.n && ys.c == xs.c && ys.h == window_output(xs.h, g.kernel, g.stride, g.pad) &&
               ys.w == window_output(xs.w, g.kernel, g.stride, g.pad),
           "maxpool shapes " + xs.str() + " " + ys.str());
  SB_CHECK(g.pad < g.kernel, "maxpool padding narrower than the window (every window holds an input)");
  return {xs.n, xs.c, xs.h, xs.w, ys.h, ys.w, g.kernel, g.stride, g.pad};
}
}  // namespace

void CudnnBackend::maxpool_forward(const Tensor& x, Tensor& y, PoolGeometry g) {
  gpu::maxpool_forward(elements(x), elements(y), pool_shape(x.shape(), y.shape(), g), state_->stream);
}

void CudnnBackend::maxpool_backward(const Tensor& x, const Tensor& dy, Tensor& dx, PoolGeometry g) {
  require_same(x, dx, "maxpool dx");
  gpu::maxpool_backward(elements(x), elements(dy), elements(dx), pool_shape(x.shape(), dy.shape(), g), state_->stream);
}

void CudnnBackend::global_avgpool_forward(const Tensor& x, Tensor& y) {
  const Shape& s = x.shape();
  SB_CHECK(y.shape() == (Shape{s.n, s.c, 1, 1}), "avgpool y");
  gpu::global_avgpool_forward(elements(x), elements(y), s.n, s.h * s.w, s.c, state_->stream);
}

void CudnnBackend::global_avgpool_backward(const Tensor& dy, Tensor& dx) {
  const Shape& s = dx.shape();
  SB_CHECK(dy.shape() == (Shape{s.n, s.c, 1, 1}), "avgpool dy");
  gpu::global_avgpool_backward(elements(dy), elements(dx), s.n, s.h * s.w, s.c, state_->stream);
}

// ---- fully connected: row-major y (N x M) = x (N x K) w^T, through column-major cuBLAS ----------

namespace {
cudaDataType_t cuda_type(ElementType type) {
  switch (type) {
    case ElementType::f16: return CUDA_R_16F;
    case ElementType::bf16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
  }
}

// C (m x n, column-major) = op(A) op(B), every operand of the backend's compute type, fp32
// accumulation; TF32 tensor cores only under --precision tf32.
void gemm(CudnnState& s, cublasOperation_t op_a, cublasOperation_t op_b, int m, int n, int k, const void* a, int lda,
          const void* b, int ldb, void* c, int ldc) {
  const float one = 1, zero = 0;
  const cudaDataType_t type = cuda_type(s.compute);
  const cublasComputeType_t compute =
      s.options.precision == Precision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  SB_CUBLAS_CHECK(cublasGemmEx(s.cublas, op_a, op_b, m, n, k, &one, a, type, lda, b, type, ldb, &zero, c, type, ldc,
                               compute, CUBLAS_GEMM_DEFAULT));
}

void require_flat(const Tensor& x) {
  SB_CHECK(x.shape().h == 1 && x.shape().w == 1, "fully connected input must be (N, K, 1, 1), got " + x.shape().str());
}
}  // namespace

void CudnnBackend::fc_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) {
  require_flat(x);
  const int64_t batch = x.shape().n, inputs = x.shape().c, outputs = w.shape().n;
  SB_CHECK(w.count() == outputs * inputs && b.count() == outputs && y.shape() == (Shape{batch, outputs, 1, 1}), "fc shapes");
  CudnnState& s = *state_;
  const Elements xe = s.as_type(x, s.compute), we = s.as_type(w, s.compute), ye = s.as_type(y, s.compute);
  // y^T (M x N) = w (K x M, column-major)^T x^T (K x N).
  gemm(s, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(outputs), static_cast<int>(batch), static_cast<int>(inputs),
       we.data, static_cast<int>(inputs), xe.data, static_cast<int>(inputs), ye.data, static_cast<int>(outputs));
  gpu::add_bias(ye, value_elements(b), static_cast<size_t>(batch), static_cast<size_t>(outputs), s.stream);
  if (ye.data != storage(y).data) gpu::convert(ye, elements(y), count_of(y), s.stream);
  s.release(xe, x), s.release(we, w), s.release(ye, y);
}

void CudnnBackend::fc_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) {
  require_flat(dx);
  const int64_t batch = dx.shape().n, inputs = dx.shape().c, outputs = w.shape().n;
  SB_CHECK(w.count() == outputs * inputs && dy.shape() == (Shape{batch, outputs, 1, 1}), "fc shapes");
  CudnnState& s = *state_;
  const Elements dye = s.as_type(dy, s.compute), we = s.as_type(w, s.compute), dxe = s.as_type(dx, s.compute);
  // dx^T (K x N) = w^T (K x M, as stored) dy^T (M x N).
  gemm(s, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(inputs), static_cast<int>(batch), static_cast<int>(outputs),
       we.data, static_cast<int>(inputs), dye.data, static_cast<int>(outputs), dxe.data, static_cast<int>(inputs));
  if (dxe.data != storage(dx).data) gpu::convert(dxe, elements(dx), count_of(dx), s.stream);
  s.release(dye, dy), s.release(we, w), s.release(dxe, dx);
}

void CudnnBackend::fc_backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db) {
  require_flat(x);
  const int64_t batch = x.shape().n, inputs = x.shape().c, outputs = dw.shape().n;
  SB_CHECK(dw.count() == outputs * inputs && db.count() == outputs && dy.shape() == (Shape{batch, outputs, 1, 1}),
           "fc shapes");
  CudnnState& s = *state_;
  const Elements xe = s.as_type(x, s.compute), dye = s.as_type(dy, s.compute), dwe = s.as_type(dw, s.compute);
  // dw^T (K x M) = x^T (K x N) dy (N x M, the transpose of dy's column-major M x N).
  gemm(s, CUBLAS_OP_N, CUBLAS_OP_T, static_cast<int>(inputs), static_cast<int>(outputs), static_cast<int>(batch),
       xe.data, static_cast<int>(inputs), dye.data, static_cast<int>(outputs), dwe.data, static_cast<int>(inputs));
  if (dwe.data != storage(dw).data) gpu::convert(dwe, elements(dw), count_of(dw), s.stream);
  gpu::channel_sum(elements(dy), elements(db), static_cast<size_t>(batch), static_cast<size_t>(outputs), s.stream);
  s.release(xe, x), s.release(dye, dy), s.release(dwe, dw);
}

// ---- element-wise, loss, optimizer -----------------------------------------------------------------

void CudnnBackend::add(const Tensor& a, const Tensor& b, Tensor& y) {
  require_same(a, b, "add");
  require_same(a, y, "add y");
  gpu::add(elements(a), elements(b), elements(y), count_of(a), state_->stream);
}

void CudnnBackend::scale(Tensor& t, float factor) {
  gpu::axpby(factor, elements(t), 0.0f, elements(t), count_of(t), state_->stream);
  if (DeviceTensor& d = storage(t); d.master) {
    const Elements master{d.master, ElementType::f32};
    gpu::axpby(factor, master, 0.0f, master, count_of(t), state_->stream);
  }
}

void CudnnBackend::scale_by(Tensor& t, const Tensor& factors, int64_t index) {
  SB_CHECK(index >= 0 && index < factors.count() && storage(factors).type == ElementType::f32,
           "an fp32 factor within the tensor");
  const float* factor = static_cast<const float*>(storage(factors).data) + index;
  gpu::scale_by(elements(t), count_of(t), factor, state_->stream);
  if (DeviceTensor& d = storage(t); d.master)
    gpu::scale_by({d.master, ElementType::f32}, count_of(t), factor, state_->stream);
}

void CudnnBackend::axpby(float a, const Tensor& x, float b, Tensor& y) {
  require_same(x, y, "axpby");
  SB_CHECK(storage(y).master == nullptr, "axpby into an optimizer-updated tensor is not supported");
  gpu::axpby(a, value_elements(x), b, elements(y), count_of(x), state_->stream);
}

double CudnnBackend::sum_of_squares(const Tensor& t) {
  return gpu::sum_of_squares(value_elements(t), count_of(t), state_->stream);
}

namespace {
// The tensors' values (masters where there are) and counts, as the batched sums take them.
struct SumOperands {
  std::vector<Elements> arrays;
  std::vector<size_t> counts;
};
SumOperands sum_operands(std::span<const Tensor* const> tensors) {
  SumOperands operands;
  for (const Tensor* t : tensors) {
    operands.arrays.push_back(value_elements(*t));
    operands.counts.push_back(count_of(*t));
  }
  return operands;
}
}  // namespace

std::vector<double> CudnnBackend::sums_of_squares(std::span<const Tensor* const> tensors) {
  const SumOperands operands = sum_operands(tensors);
  return gpu::sums_of_squares(operands.arrays, operands.counts, state_->stream);
}

void CudnnBackend::sums_of_squares_into(std::span<const Tensor* const> tensors, Tensor& sums) {
  SB_CHECK(sums.count() == static_cast<int64_t>(tensors.size()) && storage(sums).type == ElementType::f32,
           "one fp32 sum per tensor");
  const SumOperands operands = sum_operands(tensors);
  gpu::sums_of_squares_into(operands.arrays, operands.counts, static_cast<float*>(storage(sums).data), state_->stream);
}

void CudnnBackend::all_finite_into(std::span<const Tensor* const> tensors, Tensor& flags, int64_t index) {
  SB_CHECK(index >= 0 && index < flags.count() && storage(flags).type == ElementType::f32,
           "an fp32 flag within the tensor");
  const SumOperands operands = sum_operands(tensors);
  gpu::all_finite_into(operands.arrays, operands.counts, static_cast<float*>(storage(flags).data) + index,
                       state_->stream);
}

void CudnnBackend::softmax_cross_entropy(const Tensor& logits, std::span<const int32_t> labels,
                                         float label_smoothing, Tensor& dlogits, Tensor& loss) {
  require_same(logits, dlogits, "cross entropy");
  SB_CHECK(loss.count() == 1 && storage(loss).type == ElementType::f32, "the loss is one fp32 element");
  const int64_t batch = logits.shape().n, classes = logits.count() / batch;
  SB_CHECK(static_cast<int64_t>(labels.size()) == batch, "one label per sample");
  CudnnState& s = *state_;
  if (labels.size() > s.labels_capacity) {
    s.require_not_capturing("growing the labels' buffer");
    if (s.labels) SB_CUDA_CHECK(cudaFreeAsync(s.labels, s.stream));
    SB_CUDA_CHECK(cudaMallocAsync(&s.labels, labels.size() * sizeof(int32_t), s.stream));
    s.labels_capacity = labels.size();
  }
  SB_CUDA_CHECK(cudaMemcpyAsync(s.labels, labels.data(), labels.size() * sizeof(int32_t), cudaMemcpyHostToDevice, s.stream));
  // From pageable memory the copy has read `labels` when it returns; from pinned memory (a
  // captured step's labels) it reads them when the stream gets to it.
  gpu::softmax_cross_entropy(elements(logits), s.labels, elements(dlogits), static_cast<float*>(storage(loss).data),
                             batch, classes, label_smoothing, s.stream);
}

void CudnnBackend::momentum_update(Tensor& w, const Tensor& g, Tensor& v, const MomentumStep& step) {
  require_same(w, g, "momentum g");
  require_same(w, v, "momentum v");
  DeviceTensor &dw = storage(w), &dv = storage(v);
  // Without masters (fp32 tensors) the update runs in place on the tensors themselves.
  SB_CHECK((dw.master != nullptr) == (dw.type != ElementType::f32) && (dv.master != nullptr) == (dv.type != ElementType::f32),
           "momentum_update on 16-bit tensors without keep_fp32_master");
  float* weights = dw.master ? dw.master : static_cast<float*>(dw.data);
  float* velocity = dv.master ? dv.master : static_cast<float*>(dv.data);
  const Elements copy = dw.master ? elements(w) : Elements{};
  const float* rates = nullptr;
  if (step.rates) {
    SB_CHECK(step.rates->count() >= step_rate::count && storage(*step.rates).type == ElementType::f32,
             "rates are at least step_rate::count fp32 values");
    rates = static_cast<const float*>(storage(*step.rates).data);
  }
  const float* trust_norms = nullptr;
  if (step.trust_norms) {
    SB_CHECK(step.trust_index + 2 <= step.trust_norms->count() && storage(*step.trust_norms).type == ElementType::f32,
             "trust norms are fp32, two per tensor");
    trust_norms = static_cast<const float*>(storage(*step.trust_norms).data) + step.trust_index;
  }
  gpu::momentum_update(weights, copy, elements(g), velocity, count_of(w),
                       {step.lr, step.momentum, step.momentum_scale, step.weight_decay, step.grad_scale, step.nesterov,
                        rates, trust_norms, step.trust_eta},
                       state_->stream);
}

}  // namespace sb::models
