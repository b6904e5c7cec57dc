#pragma once
// Check macros for cuDNN and cuBLAS calls; CUDA builds only. Same one-line report as
// common/check.hpp: host:rank, file:line, the call and the library's own message.
#include <cublas_v2.h>
#include <cudnn.h>

#include <string>

#include "common/check.hpp"

#define SB_CUDNN_CHECK(call)                                                                    \
  do {                                                                                          \
    cudnnStatus_t sb_cudnn_rc_ = (call);                                                        \
    if (sb_cudnn_rc_ != CUDNN_STATUS_SUCCESS)                                                   \
      ::sb::die(__FILE__, __LINE__, std::string("cuDNN: ") + #call + ": " + cudnnGetErrorString(sb_cudnn_rc_)); \
  } while (0)

#define SB_CUBLAS_CHECK(call)                                                                    \
  do {                                                                                           \
    cublasStatus_t sb_cublas_rc_ = (call);                                                       \
    if (sb_cublas_rc_ != CUBLAS_STATUS_SUCCESS)                                                  \
      ::sb::die(__FILE__, __LINE__, std::string("cuBLAS: ") + #call + ": " + cublasGetStatusString(sb_cublas_rc_)); \
  } while (0)
