#include <nvtx3/nvToolsExt.h>

#include <cstdio>

#include "common/nvtx.hpp"

namespace sb {

NvtxRange::NvtxRange(const char* name) { nvtxRangePushA(name); }

NvtxRange::NvtxRange(const char* what, int64_t number) {
  char name[96];
  std::snprintf(name, sizeof name, "%s %lld", what, static_cast<long long>(number));
  nvtxRangePushA(name);
}

NvtxRange::~NvtxRange() { nvtxRangePop(); }

}  // namespace sb
