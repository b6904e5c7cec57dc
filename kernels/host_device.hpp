#pragma once
// SB_HD marks element functions that are compiled for the CPU and, under nvcc, for the GPU too,
// so the CPU tests cover the same arithmetic the GPU runs.
#if defined(__CUDACC__)
#define SB_HD __host__ __device__ __forceinline__
#else
#define SB_HD inline
#endif
