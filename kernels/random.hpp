#pragma once
// Counter-based random numbers: a value is a pure function of (key, counter), so any element of
// a random stream can be drawn independently, by any thread, on the CPU or the GPU, and every
// rank that shares a key draws the same numbers. SplitMix64's finaliser does the mixing.
#include <cstdint>

#include "kernels/host_device.hpp"

namespace sb {

SB_HD uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A key for one stream: e.g. (seed, rank, step).
SB_HD uint64_t random_key(uint64_t a, uint64_t b, uint64_t c) { return mix64(mix64(mix64(a) ^ b) ^ c); }

SB_HD uint64_t random_bits(uint64_t key, uint64_t counter) { return mix64(key ^ mix64(counter)); }

// Uniform in [0, 1), with 24 random bits (every value exact in fp32).
SB_HD float random_unit(uint64_t key, uint64_t counter) {
  return static_cast<float>(random_bits(key, counter) >> 40) * (1.0f / 16777216.0f);
}

}  // namespace sb
