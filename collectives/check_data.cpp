#include "collectives/check_data.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace sb {
namespace {

// Largest L such that every integer in [-L, L] is exact in the datatype.
int64_t exact_limit(DataType type) {
  switch (type) {
    case DataType::float16: return 2048;
    case DataType::bfloat16: return 256;
    case DataType::int8: return 127;
    case DataType::float32: return int64_t{1} << 24;
    case DataType::int32:
    case DataType::float64: return (int64_t{1} << 31) - 1;
  }
  return 127;
}

// splitmix64's finaliser: a cheap, well-mixed hash of (rank, index).
uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t hash(int rank, size_t index) {
  return mix(index * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(rank) + 1);
}

// A value in [-bound, bound] that varies with rank and index; bound >= 1. Never zero, so that a
// rank whose data was dropped always changes the result.
int64_t signed_value(int rank, size_t index, int64_t bound) {
  const int64_t magnitude = 1 + static_cast<int64_t>(hash(rank, index) % static_cast<uint64_t>(bound));
  return (hash(rank, index) >> 40) & 1 ? -magnitude : magnitude;
}

// Ranks that contribute a nonzero value at `index` when at most `contributors` may: every
// stride-th rank, the phase moving with the index.
bool contributes(int rank, int nranks, size_t index, int64_t contributors) {
  if (contributors >= nranks) return true;
  const int64_t stride = (nranks + contributors - 1) / contributors;
  return (static_cast<int64_t>(index) + rank) % stride == 0;
}

int64_t floor_log2(int64_t x) {
  int64_t bits = 0;
  while (x > 1) {
    x >>= 1;
    ++bits;
  }
  return bits;
}

}  // namespace

double check_input_value(DataType type, RedOp op, int rank, int nranks, size_t index) {
  const int64_t limit = exact_limit(type);
  const int64_t p = nranks;
  switch (op) {
    case RedOp::max:
    case RedOp::min:
      return static_cast<double>(static_cast<int64_t>(hash(rank, index) % 201) - 100);
    case RedOp::sum: {
      const int64_t bound = std::min<int64_t>(limit / p, 1000);
      if (bound >= 1) return static_cast<double>(signed_value(rank, index, bound));
      return contributes(rank, nranks, index, limit) ? signed_value(rank, index, 1) : 0.0;
    }
    case RedOp::avg: {
      const int64_t bound = std::min<int64_t>(limit / (p * p), 1000);
      if (bound >= 1) return static_cast<double>(p * signed_value(rank, index, bound));
      if (limit / p < 1) return 0.0;  // p > L: no nonzero multiple of p is exact
      return contributes(rank, nranks, index, limit / p) ? static_cast<double>(p * signed_value(rank, index, 1))
                                                         : 0.0;
    }
    case RedOp::prod: {
      const int64_t sign = hash(rank, index) % 7 == 0 ? -1 : 1;
      const bool two = contributes(rank, nranks, index, floor_log2(limit));
      return static_cast<double>(sign * (two ? 2 : 1));
    }
  }
  return 0.0;
}

double check_expected_value(DataType type, RedOp op, int nranks, size_t index) {
  double result = check_input_value(type, op, 0, nranks, index);
  for (int rank = 1; rank < nranks; ++rank) {
    const double value = check_input_value(type, op, rank, nranks, index);
    switch (op) {
      case RedOp::sum:
      case RedOp::avg: result += value; break;
      case RedOp::prod: result *= value; break;
      case RedOp::max: result = std::max(result, value); break;
      case RedOp::min: result = std::min(result, value); break;
    }
  }
  return op == RedOp::avg ? result / nranks : result;  // exact: the sum is a multiple of p
}

namespace {

template <class T>
double as_double(T value) {
  if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>)
    return static_cast<double>(to_float(value));
  else
    return static_cast<double>(value);
}

template <class T>
T from_double(double value) {
  if constexpr (std::is_same_v<T, float16>)
    return to_float16(static_cast<float>(value));
  else if constexpr (std::is_same_v<T, bfloat16>)
    return to_bfloat16(static_cast<float>(value));
  else
    return static_cast<T>(value);
}

// Two units in the last place of `value` in a format with `digits` significand bits.
double two_ulps(double value, int digits) {
  if (value == 0) return 0;
  int exponent = 0;
  std::frexp(value, &exponent);
  return std::ldexp(2.0, exponent - digits);
}

int significand_bits(DataType type) {
  switch (type) {
    case DataType::float16: return 11;
    case DataType::bfloat16: return 8;
    case DataType::float32: return 24;
    case DataType::float64: return 53;
    default: return 64;
  }
}

}  // namespace

void fill_check_input(void* buffer, size_t count, DataType type, RedOp op, int rank, int nranks,
                      size_t first) {
  dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    T* values = static_cast<T*>(buffer);
    for (size_t i = 0; i < count; ++i)
      values[i] = from_double<T>(check_input_value(type, op, rank, nranks, first + i));
  });
}

void fill_check_expected(void* buffer, size_t count, DataType type, RedOp op, int nranks,
                         size_t first) {
  dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    T* values = static_cast<T*>(buffer);
    for (size_t i = 0; i < count; ++i)
      values[i] = from_double<T>(check_expected_value(type, op, nranks, first + i));
  });
}

size_t count_mismatches(const void* result, const void* expected, size_t count, DataType type,
                        RedOp op) {
  const bool tolerant = op == RedOp::avg && is_floating(type);
  const int digits = significand_bits(type);
  return dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    const T* got = static_cast<const T*>(result);
    const T* want = static_cast<const T*>(expected);
    size_t wrong = 0;
    for (size_t i = 0; i < count; ++i) {
      const double g = as_double(got[i]);
      const double w = as_double(want[i]);
      const bool ok = tolerant ? std::fabs(g - w) <= two_ulps(w, digits) : g == w;
      wrong += ok ? 0 : 1;
    }
    return wrong;
  });
}

size_t count_wrong(const void* result, size_t count, DataType type, RedOp op, int nranks,
                   size_t first) {
  std::vector<unsigned char> expected(count * size_of(type));
  fill_check_expected(expected.data(), count, type, op, nranks, first);
  return count_mismatches(result, expected.data(), count, type, op);
}

}  // namespace sb
