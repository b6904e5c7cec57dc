#include "models/backend.hpp"

#include "common/usage_error.hpp"
#include "models/onednn_backend.hpp"
#include "models/reference_backend.hpp"

namespace sb::models {

std::unique_ptr<Backend> make_backend(const std::string& name, int threads) {
  if (name == "onednn") return std::make_unique<OnednnBackend>(threads);
  if (name == "reference") return std::make_unique<ReferenceBackend>();
  throw UsageError("unknown backend '" + name + "' (onednn, reference)");
}

}  // namespace sb::models
