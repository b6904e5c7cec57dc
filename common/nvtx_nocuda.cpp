// Builds without CUDA: no NVIDIA tool can attach, and a range is nothing.
#include "common/nvtx.hpp"

namespace sb {

NvtxRange::NvtxRange(const char*) {}

NvtxRange::NvtxRange(const char*, int64_t) {}

NvtxRange::~NvtxRange() {}

}  // namespace sb
