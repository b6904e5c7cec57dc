#pragma once
// SB_VECTOR_CLONES marks a hot CPU loop to be compiled for AVX-512, AVX2 and the baseline, the
// widest the CPU has being picked at run time (GCC's target_clones): more lanes, real blends for
// selects and vector 64-bit multiplies where the baseline (SSE2) has none. Same arithmetic in
// every clone. Free functions only (not templates); off under AddressSanitizer and
// ThreadSanitizer, whose instrumented resolvers run before the sanitizer's runtime is up.
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define SB_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SB_VECTOR_CLONES
#endif
