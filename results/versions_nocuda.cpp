// CPU-only builds link no CUDA library, so there are no CUDA versions to record.
#include <string>
#include <utility>
#include <vector>

namespace sb {
std::vector<std::pair<std::string, std::string>> cuda_library_versions() { return {}; }
}  // namespace sb
