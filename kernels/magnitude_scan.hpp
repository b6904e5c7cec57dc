#pragma once
// Host helpers shared by the magnitude selections (top-k, DGC's threshold): a float's magnitude
// as an integer key, and a scan that visits the few values at or above a key quickly.
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace sb {

// |x| as an integer that orders like |x|, with NaN above infinity (its exponent is all ones and
// its mantissa is not zero), so a NaN gradient is never ranked below a number.
inline uint32_t magnitude_key(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits & 0x7fffffffu;
}

// Calls visit(i, key) for every i in [0, count) whose key is at least `lowest`, in index order.
// When few values qualify (a density of a few per cent), most chunks of 16 hold none, and one
// branch-free test per chunk passes them over: the compiler turns it into a few vector compares.
// Keys are below 2^31, so comparing them as signed is exact (SSE2 has only signed compares).
template <class Visit>
void for_each_at_least(const float* values, size_t count, uint32_t lowest, Visit&& visit) {
  constexpr size_t kChunk = 16;
  const auto visit_if = [&](size_t i) {
    const uint32_t key = magnitude_key(values[i]);
    if (key >= lowest) visit(i, key);
  };
  size_t i = 0;
  for (; i + kChunk <= count; i += kChunk) {
    int reached = 0;
    for (size_t j = i; j < i + kChunk; ++j)
      reached |= static_cast<int32_t>(magnitude_key(values[j])) >= static_cast<int32_t>(lowest);
    if (reached)
      for (size_t j = i; j < i + kChunk; ++j) visit_if(j);
  }
  for (; i < count; ++i) visit_if(i);
}

}  // namespace sb
