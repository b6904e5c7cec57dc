#include "models/backend.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "common/check.hpp"
#include "common/usage_error.hpp"
#include "models/onednn_backend.hpp"
#include "models/recording_backend.hpp"
#include "models/reference_backend.hpp"
#if SB_HAVE_CUDA
#include "models/cudnn_backend.hpp"
#endif

namespace sb::models {

Precision parse_precision(const std::string& name) {
  if (name == "fp32") return Precision::fp32;
  if (name == "tf32") return Precision::tf32;
  if (name == "fp16") return Precision::fp16;
  if (name == "bf16") return Precision::bf16;
  throw UsageError("unknown precision '" + name + "' (fp32, tf32, fp16, bf16)");
}

std::string precision_name(Precision precision) {
  switch (precision) {
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::fp16: return "fp16";
    case Precision::bf16: return "bf16";
  }
  return "?";
}

std::vector<double> Backend::sums_of_squares(std::span<const Tensor* const> tensors) {
  std::vector<double> sums;
  sums.reserve(tensors.size());
  for (const Tensor* t : tensors) sums.push_back(sum_of_squares(*t));
  return sums;
}

double Backend::read_scalar(const Tensor& scalar) {
  SB_CHECK(scalar.count() == 1, "read_scalar of a tensor of " + std::to_string(scalar.count()) + " elements");
  float value = 0;
  read(scalar, std::span<float>(&value, 1));
  return value;
}

void Backend::begin_capture() { throw std::logic_error("the " + name() + " backend cannot capture a step"); }
void Backend::end_capture(bool keep) {
  if (keep) throw std::logic_error("the " + name() + " backend cannot capture a step");
}
void Backend::replay() { throw std::logic_error("the " + name() + " backend cannot replay a step"); }

std::vector<float> read_all(Backend& backend, const Tensor& tensor) {
  std::vector<float> out(static_cast<size_t>(tensor.count()));
  backend.read(tensor, out);
  return out;
}

double softmax_cross_entropy_now(Backend& backend, const Tensor& logits, std::span<const int32_t> labels,
                                 float label_smoothing, Tensor& dlogits) {
  Tensor loss = backend.allocate({1, 1, 1, 1});
  backend.softmax_cross_entropy(logits, labels, label_smoothing, dlogits, loss);
  return backend.read_scalar(loss);
}

void Backend::sums_of_squares_into(std::span<const Tensor* const> tensors, Tensor& sums) {
  SB_CHECK(sums.count() == static_cast<int64_t>(tensors.size()), "one sum per tensor");
  const std::vector<double> exact = sums_of_squares(tensors);
  write(sums, std::vector<float>(exact.begin(), exact.end()));
}

void Backend::all_finite_into(std::span<const Tensor* const> tensors, Tensor& flags, int64_t index) {
  SB_CHECK(index >= 0 && index < flags.count(), "a flag within the tensor");
  const std::vector<double> sums = sums_of_squares(tensors);
  std::vector<float> values = read_all(*this, flags);
  values[static_cast<size_t>(index)] = std::all_of(sums.begin(), sums.end(), [](double s) { return std::isfinite(s); });
  write(flags, values);
}

void Backend::scale_by(Tensor& tensor, const Tensor& factors, int64_t index) {
  SB_CHECK(index >= 0 && index < factors.count(), "a factor within the tensor");
  scale(tensor, read_all(*this, factors)[static_cast<size_t>(index)]);
}

std::unique_ptr<Backend> make_backend(const std::string& name, const BackendOptions& options) {
  // Tests only (sb-train does not offer it): another backend with CUDA-graph recording emulated.
  if (const std::string prefix = "recording:"; name.rfind(prefix, 0) == 0)
    return std::make_unique<RecordingBackend>(make_backend(name.substr(prefix.size()), options));
  if (name == "cudnn") {
#if SB_HAVE_CUDA
    CudnnOptions cudnn;
    cudnn.precision = options.precision;
    cudnn.device = options.local_rank;
    cudnn.timed_search = options.timed_search;
    return std::make_unique<CudnnBackend>(cudnn);
#else
    throw UsageError("the cudnn backend needs a CUDA build (make CUDA=1)");
#endif
  }
  if (options.precision != Precision::fp32)
    throw UsageError("the " + name + " backend runs fp32 only, not " + precision_name(options.precision));
  if (name == "onednn") return std::make_unique<OnednnBackend>(options.threads);
  if (name == "reference") return std::make_unique<ReferenceBackend>();
  throw UsageError("unknown backend '" + name + "' (onednn, reference" + (SB_HAVE_CUDA ? ", cudnn)" : ")"));
}

}  // namespace sb::models
