#pragma once
// SB_SKIP_WITHOUT_GPU(): skips the calling test unless this is a CUDA build with a GPU visible, so
// the GPU tests build everywhere and report themselves skipped where they cannot run.
#include <gtest/gtest.h>

#if SB_HAVE_CUDA
#include <cuda_runtime.h>
#define SB_SKIP_WITHOUT_GPU()                                                                                    \
  do {                                                                                                           \
    int sb_devices_ = 0;                                                                                         \
    if (cudaGetDeviceCount(&sb_devices_) != cudaSuccess || sb_devices_ == 0) GTEST_SKIP() << "no GPU visible"; \
  } while (0)
#else
#define SB_SKIP_WITHOUT_GPU() GTEST_SKIP() << "built without CUDA"
#endif
