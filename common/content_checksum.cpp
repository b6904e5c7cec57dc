#include "common/content_checksum.hpp"

#include <bit>
#include <cstdio>
#include <cstring>

namespace sb {
namespace {

// Odd multipliers (the golden ratio's and xxHash's), so that multiplying is a bijection mod 2^64.
constexpr uint64_t kMulIn = 0x9E3779B97F4A7C15ULL;
constexpr uint64_t kMulOut = 0xC2B2AE3D27D4EB4FULL;

// Bijective in `word` for a fixed state and in the state for a fixed word: one changed word
// changes the state, and every later step carries the change through.
uint64_t mix(uint64_t state, uint64_t word) { return std::rotl(state ^ (word * kMulIn), 31) * kMulOut; }

// A bijective finaliser (MurmurHash3's fmix64), so that nearby states give unrelated sums.
uint64_t finish(uint64_t h) {
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDULL;
  h ^= h >> 33;
  h *= 0xC4CEB9FE1A85EC53ULL;
  h ^= h >> 33;
  return h;
}

uint64_t load_word(const std::byte* p) {
  uint64_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}

}  // namespace

uint64_t hash_bytes(std::span<const std::byte> bytes, uint64_t seed) {
  // Four independent lanes over 32-byte blocks: a checkpoint's hundreds of megabytes hash at
  // memory speed rather than at one multiply's latency per word.
  uint64_t lane[4] = {seed, seed + kMulIn, seed + 2 * kMulIn, seed + 3 * kMulIn};
  const size_t n = bytes.size();
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int k = 0; k < 4; ++k) lane[k] = mix(lane[k], load_word(bytes.data() + i + 8 * k));
  uint64_t h = mix(mix(mix(lane[0], lane[1]), lane[2]), lane[3]);
  for (; i + 8 <= n; i += 8) h = mix(h, load_word(bytes.data() + i));
  if (i < n) {  // the tail, zero-padded: the length below tells "ab" from "ab\0"
    uint64_t tail = 0;
    std::memcpy(&tail, bytes.data() + i, n - i);
    h = mix(h, tail);
  }
  return finish(mix(h, static_cast<uint64_t>(n)));
}

void ContentChecksum::add_bytes(std::string_view name, std::span<const std::byte> bytes) {
  sum_ += hash_bytes(bytes, hash_bytes(std::as_bytes(std::span(name)), 0));
}

std::string ContentChecksum::hex() const {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(sum_));
  return text;
}

}  // namespace sb
