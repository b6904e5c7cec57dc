// Versions of the CUDA runtime, driver and NCCL this CUDA build runs with.
#include <cuda_runtime.h>
#include <nccl.h>

#include <string>
#include <utility>
#include <vector>

namespace sb {
namespace {
std::string cuda_version_string(int version) {  // 12040 -> "12.4"
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}
}  // namespace

std::vector<std::pair<std::string, std::string>> cuda_library_versions() {
  std::vector<std::pair<std::string, std::string>> versions;
  int runtime = 0, driver = 0, nccl = 0;
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess)
    versions.emplace_back("cuda_runtime", cuda_version_string(runtime));
  // The driver version is 0 on a machine without a GPU driver.
  if (cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0)
    versions.emplace_back("cuda_driver", cuda_version_string(driver));
  if (ncclGetVersion(&nccl) == ncclSuccess)  // 22805 -> 2.28.5
    versions.emplace_back("nccl", std::to_string(nccl / 10000) + "." +
                                      std::to_string(nccl % 10000 / 100) + "." +
                                      std::to_string(nccl % 100));
  return versions;
}
}  // namespace sb
