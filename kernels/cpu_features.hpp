#pragma once
// Which x86 vector extensions this CPU has, checked once, for the host loops written out with
// intrinsics beside their portable forms (the AVX2 sign, bf16 and F16C helpers).
#if defined(__x86_64__)

namespace sb {

inline bool has_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
}

}  // namespace sb

#endif
