#include <nvtx3/nvToolsExt.h>

#include "common/nvtx.hpp"

namespace sb {

NvtxRange::NvtxRange(const char* name) { nvtxRangePushA(name); }

NvtxRange::~NvtxRange() { nvtxRangePop(); }

}  // namespace sb
