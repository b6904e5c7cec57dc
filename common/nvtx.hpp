#pragma once
// Named ranges on NVIDIA's tools' timeline, for GPU runs, which sb-train's --trace (host-timed)
// does not trace: under Nsight Systems (`nsys profile mpirun ... sb-train --backend cudnn`) each
// step, its phases and each gradient bucket's launch show as an NVTX range on the host thread that
// queued their kernels, beside the kernels themselves and NCCL's own ranges. Without a tool
// attached, and in builds without CUDA, a range costs next to nothing and records nothing.
#include <cstdint>

namespace sb {

class NvtxRange {
 public:
  explicit NvtxRange(const char* name);  // pushes the range on this thread
  // "WHAT NUMBER" ("step 7", "bucket 3"), formatted only where a tool could see it: a bucket's
  // range is opened on every bucket of every step.
  NvtxRange(const char* what, int64_t number);
  ~NvtxRange();  // pops it
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace sb
