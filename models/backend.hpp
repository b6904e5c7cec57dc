#pragma once
// The narrow set of operations the ResNet family needs, over tensors the backend owns. The model
// code (layers.cpp, resnet.cpp) is written against this interface only, so the oneDNN (CPU),
// cuDNN (GPU) and reference backends are interchangeable under it.
//
// Conventions for every operation:
// - outputs are allocated by the caller (Backend::allocate) with the shapes documented here, and
//   are overwritten, never accumulated into;
// - convolution weights are (out channels, in channels, kh, kw), fully-connected weights are
//   (outputs, inputs, 1, 1), per-channel vectors are (1, C, 1, 1), as torchvision stores them;
// - an output may be the same tensor as an input only where it says so.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "models/data/host_memory.hpp"
#include "models/optimizer_math.hpp"
#include "models/tensor.hpp"

namespace sb::models {

struct ConvGeometry {
  int stride = 1;
  int pad = 0;  // the same on every side
};

// Output extent of a convolution or pooling window along one axis.
inline int64_t window_output(int64_t in, int kernel, int stride, int pad) {
  return (in + 2 * pad - kernel) / stride + 1;
}

struct PoolGeometry {
  int kernel = 3;
  int stride = 2;
  int pad = 1;
};

// One optimizer step for one tensor, element by element (models/optimizer_math.hpp), from the
// gradient g = grad_scale * (the stored gradient), grad_scale undoing fp16 loss scaling:
//   g' = g + weight_decay * w
//   v  = momentum_scale * momentum * v + lr * g'
//   w -= nesterov ? momentum * v + lr * g' : v
// The learning rate is folded into the momentum buffer (as MLPerf's LARS does), so a per-tensor
// rate (LARS's trust ratio) needs no second buffer. momentum_scale is 1, or with momentum
// correction (Goyal et al.) lr / the previous step's lr, which keeps the buffer lr times PyTorch's
// (u = m u + g', w -= lr u) while the rate changes.
// MomentumStep::rates keeps each value at its step_rate index (models/optimizer_math.hpp).

struct MomentumStep {
  float lr = 0.1f;
  float momentum = 0.9f;
  float weight_decay = 0.0f;
  bool nesterov = false;
  float grad_scale = 1.0f;
  float momentum_scale = 1.0f;
  // When set, lr, grad_scale and momentum_scale are read from this fp32 tensor of at least
  // step_rate::count elements (at step_rate::lr, ...) when the update runs, instead of from the fields
  // above: the replays of a recorded step (begin_capture) then take each step's values, written
  // into it before each replay. A 0 at step_rate::apply skips the update, w and v left as they
  // are: an fp16 step whose gradients overflowed, as all_finite_into() flags it on the device.
  const Tensor* rates = nullptr;
  // LARS: when set, lr is multiplied by this tensor's trust ratio (lars_rate in
  // models/optimizer_math.hpp, with trust_eta and weight_decay), computed when the update runs
  // from squared norms found in trust_norms: the weight's at element trust_index, its stored
  // gradient's at trust_index + 1 (as sums_of_squares_into writes them), so nothing waits for them.
  const Tensor* trust_norms = nullptr;
  int64_t trust_index = 0;
  float trust_eta = 0;
};

// The arithmetic of the training math (--precision): fp32 throughout, TF32 tensor-core math on
// fp32 storage, or fp16/bf16 storage and math with fp32 accumulation and fp32 master weights.
// The CPU backends run fp32 only.
enum class Precision { fp32, tf32, fp16, bf16 };
Precision parse_precision(const std::string& name);  // UsageError for unknown names
std::string precision_name(Precision precision);

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;

  // A zero-filled tensor.
  virtual Tensor allocate(Shape shape) = 0;
  // Host data in NCHW order, fp32, exactly shape.count() elements.
  virtual void write(Tensor& tensor, std::span<const float> nchw) = 0;
  virtual void read(const Tensor& tensor, std::span<float> nchw) = 0;
  // The value of a one-element tensor (a loss) in the backend's own precision, once the work that
  // writes it is done.
  virtual double read_scalar(const Tensor& scalar);
  virtual void fill(Tensor& tensor, float value) = 0;
  virtual void copy(const Tensor& from, Tensor& to) = 0;

  // Convolution without bias (every convolution of a ResNet feeds a batch norm).
  // x: (N, C, H, W), w: (K, C, R, S), y: (N, K, P, Q) with P, Q from window_output().
  virtual void conv_forward(const Tensor& x, const Tensor& w, Tensor& y, ConvGeometry g) = 0;
  virtual void conv_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx, ConvGeometry g) = 0;
  virtual void conv_backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, ConvGeometry g) = 0;

  // Batch norm over N, H, W of each channel. Training normalises by the batch's mean and biased
  // variance and returns them (1, C, 1, 1) for the backward pass and the running statistics;
  // inference uses the running mean and variance given. With relu, y = max(0, bn(x)), and the
  // backward pass takes y to mask dy: the BN+ReLU fusion where the library offers it. With a
  // residual (x's shape, not y), it is added before the ReLU: y = max(0, bn(x) + residual), a
  // residual block's last BN, add and ReLU in one pass over memory (its backward then takes dy
  // already masked, without y).
  virtual void batchnorm_forward_training(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                          Tensor& y, Tensor& mean, Tensor& variance, float epsilon,
                                          bool relu, const Tensor* residual) = 0;
  virtual void batchnorm_forward_inference(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                           const Tensor& mean, const Tensor& variance, Tensor& y,
                                           float epsilon, bool relu, const Tensor* residual) = 0;
  // dy is not modified. With relu, y is the forward output.
  virtual void batchnorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                  const Tensor& mean, const Tensor& variance, const Tensor* y,
                                  Tensor& dx, Tensor& dgamma, Tensor& dbeta, float epsilon) = 0;

  // y = max(0, x); y may be x. Backward masks dy by y > 0 (y being the forward output); dx may be dy.
  virtual void relu_forward(const Tensor& x, Tensor& y) = 0;
  virtual void relu_backward(const Tensor& y, const Tensor& dy, Tensor& dx) = 0;

  // Max pooling with padding that never wins; backward routes each dy to the first maximum of
  // its window (ties to the lowest index within the window).
  virtual void maxpool_forward(const Tensor& x, Tensor& y, PoolGeometry g) = 0;
  virtual void maxpool_backward(const Tensor& x, const Tensor& dy, Tensor& dx, PoolGeometry g) = 0;
  // Mean over H, W: x (N, C, H, W) -> y (N, C, 1, 1).
  virtual void global_avgpool_forward(const Tensor& x, Tensor& y) = 0;
  virtual void global_avgpool_backward(const Tensor& dy, Tensor& dx) = 0;

  // Fully connected: x (N, K, 1, 1) or (N, C, H, W) with C*H*W = K, w (M, K, 1, 1), b (1, M, 1, 1),
  // y (N, M, 1, 1) = x w^T + b.
  virtual void fc_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) = 0;
  virtual void fc_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) = 0;
  virtual void fc_backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db) = 0;

  // y = a + b; y may be a or b.
  virtual void add(const Tensor& a, const Tensor& b, Tensor& y) = 0;
  virtual void scale(Tensor& tensor, float factor) = 0;
  // scale() by factors[index], read where the op runs (a recorded step's fp16 loss scale, written
  // before each replay). This default reads it back first.
  virtual void scale_by(Tensor& tensor, const Tensor& factors, int64_t index);
  // y = a * x + b * y.
  virtual void axpby(float a, const Tensor& x, float b, Tensor& y) = 0;
  virtual double sum_of_squares(const Tensor& tensor) = 0;
  // sum_of_squares of each tensor, in order. A GPU backend queues them all and waits once, where
  // one call per tensor would wait once per tensor (LARS's norms, the fp16 overflow check).
  virtual std::vector<double> sums_of_squares(std::span<const Tensor* const> tensors);
  // The same into element i of `sums` (1, n, 1, 1), not read back: for ops that take them from
  // there (MomentumStep::trust_norms). This default reads them and writes them back.
  virtual void sums_of_squares_into(std::span<const Tensor* const> tensors, Tensor& sums);
  // flags[index] = 1 when every element of every tensor is finite, else 0, written where the op
  // runs and not read back: a recorded fp16 step's overflow check, which the update it records
  // reads (MomentumStep::rates). This default reads the sums of squares back (an inf or NaN
  // anywhere makes its tensor's sum not finite).
  virtual void all_finite_into(std::span<const Tensor* const> tensors, Tensor& flags, int64_t index);

  // Mean over the batch of the cross-entropy between softmax(logits) and the label-smoothed
  // target (1 - s) * onehot + s / classes. logits (N, classes, 1, 1); labels on the host, N of
  // them, each in [0, classes). dlogits (same shape) receives the gradient of the mean and `loss`
  // (1, 1, 1, 1) the mean. Nothing waits for the loss here: the caller reads it (read_scalar())
  // once the rest of the step is queued, so a GPU is not left idle while the host looks at it.
  // `labels` must stay unchanged until then (a GPU backend copies them on its stream).
  virtual void softmax_cross_entropy(const Tensor& logits, std::span<const int32_t> labels, float label_smoothing,
                                     Tensor& dlogits, Tensor& loss) = 0;

  // One optimizer step: w, g and the momentum buffer v have the same shape.
  virtual void momentum_update(Tensor& w, const Tensor& g, Tensor& v, const MomentumStep& step) = 0;

  // A tensor the optimizer updates (weights and their momentum): a backend that computes in 16
  // bits keeps an fp32 copy of it that the update runs on (a no-op for fp32 backends).
  virtual void keep_fp32_master(Tensor&) {}

  // The tensor's elements as fp32 in host memory, for host-side communication (gradient
  // allreduce); nullptr where the backend keeps them elsewhere or in another type.
  virtual float* host_fp32(const Tensor&) { return nullptr; }

  // Host memory that write() copies from fastest (a GPU backend's pinned pool), for the loader to
  // build its batches in; nullptr: ordinary heap memory is as good.
  virtual HostMemory* input_memory() { return nullptr; }
  // Whether prefetch() does anything: the trainer then fetches each next batch during the step
  // before it, to hand it over early.
  virtual bool copies_ahead() const { return false; }
  // Starts copying a batch that the next write() of an input will ask for (the same span, or
  // consecutive slices of it in order: micro-batches) to the device, on a stream of its own, so
  // that the copy runs while the current step computes. GPU backends; the others copy in write().
  // `nchw` must stay valid until the write() of its last slice.
  virtual void prefetch(std::span<const float> /*nchw*/) {}

  // The device this backend computes on ("cuda:0 NVIDIA H200"), or empty for the host.
  virtual std::string device_name() const { return {}; }

  // The most memory in use on that device at once so far, in bytes, as the device reports it (so
  // the CUDA context and the libraries' own buffers count, and any other process on the same
  // device), sampled after every allocation and every synchronize() and now; 0 for the host.
  virtual int64_t peak_device_bytes() { return 0; }

  // Waits for every operation issued so far (a no-op for synchronous backends).
  virtual void synchronize() {}

  // A captured step (CUDA graphs, sb-train --cuda-graph). Between begin_capture() and
  // end_capture() the backend records its ops instead of running them; replay() runs the
  // recording again, on whatever its tensors hold by then, for one launch's worth of host time.
  // So while capturing:
  // - no tensor the ops use may be allocated or freed, before the replays are done: run the
  //   work once uncaptured first, so that every tensor, workspace and algorithm choice exists;
  // - a host span an op reads (the loss's labels) is read again from the same address at each
  //   replay: it must be input_memory(), stay put, and be refilled in place before replay();
  // - nothing may return a value to the host (read, sum_of_squares), and scalar arguments (a
  //   scale factor) are fixed in the recording: capture again when one changes.
  // end_capture(false) ends a capture that failed part-way and drops it, never throwing.
  virtual bool can_capture() const { return false; }
  virtual void begin_capture();
  virtual void end_capture(bool keep = true);
  virtual void replay();
};

struct BackendOptions {
  int threads = 0;  // oneDNN: OpenMP threads (0: OMP_NUM_THREADS or every core)
  Precision precision = Precision::fp32;
  int local_rank = 0;         // cudnn: the GPU is local_rank modulo the GPUs visible, one per rank
  bool timed_search = false;  // cudnn: time the convolution algorithms instead of the heuristics
};

// Every element of the tensor, as fp32 in NCHW order (Backend::read into a new vector).
std::vector<float> read_all(Backend& backend, const Tensor& tensor);
// softmax_cross_entropy() and the mean loss it writes, waited for: for one-off passes and tests.
double softmax_cross_entropy_now(Backend& backend, const Tensor& logits, std::span<const int32_t> labels,
                                 float label_smoothing, Tensor& dlogits);

// "onednn" (and "cudnn" when built with CUDA) or "reference"; "recording:NAME" wraps NAME in a
// RecordingBackend (models/recording_backend.hpp), for tests. Throws UsageError for other names,
// for "cudnn" without a GPU, and for a precision the backend does not run.
std::unique_ptr<Backend> make_backend(const std::string& name, const BackendOptions& options = {});

}  // namespace sb::models
