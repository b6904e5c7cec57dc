#pragma once
// Named ranges on NVIDIA's tools' timeline, for GPU runs, which sb-train's --trace (host-timed)
// does not trace: under Nsight Systems (`nsys profile mpirun ... sb-train --backend cudnn`) each
// step, its phases and each gradient bucket's launch show as an NVTX range on the host thread that
// queued their kernels, beside the kernels themselves and NCCL's own ranges. Without a tool
// attached, and in builds without CUDA, a range costs next to nothing and records nothing.
#include <string>

namespace sb {

class NvtxRange {
 public:
  explicit NvtxRange(const char* name);  // pushes the range on this thread
  explicit NvtxRange(const std::string& name) : NvtxRange(name.c_str()) {}
  ~NvtxRange();  // pops it
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace sb
