#include "models/backend.hpp"

#include "common/usage_error.hpp"
#include "models/onednn_backend.hpp"
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

std::unique_ptr<Backend> make_backend(const std::string& name, const BackendOptions& options) {
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
