#pragma once
// Check macros for CUDA runtime and NCCL calls; CUDA builds only. Same one-line report as
// common/check.hpp: host:rank, file:line, the call and the library's own message.
#include <cuda_runtime.h>
#include <nccl.h>

#include <string>

#include "common/check.hpp"

#define SB_CUDA_CHECK(call)                                                              \
  do {                                                                                   \
    cudaError_t sb_cuda_rc_ = (call);                                                    \
    if (sb_cuda_rc_ != cudaSuccess)                                                      \
      ::sb::die(__FILE__, __LINE__,                                                      \
                std::string("CUDA: ") + #call + ": " + cudaGetErrorString(sb_cuda_rc_)); \
  } while (0)

#define SB_NCCL_CHECK(call)                                                                  \
  do {                                                                                       \
    ncclResult_t sb_nccl_rc_ = (call);                                                       \
    if (sb_nccl_rc_ != ncclSuccess)                                                          \
      ::sb::die(__FILE__, __LINE__, std::string("NCCL: ") + #call + ": " +                   \
                                        ncclGetErrorString(sb_nccl_rc_) + " (" +             \
                                        ncclGetLastError(nullptr) + ")");                    \
  } while (0)
