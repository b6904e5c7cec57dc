#include "kernels/reduce.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace sb {
namespace {

TEST(Combine, EveryOperation) {
  EXPECT_EQ(combine(RedOp::sum, 3, 4), 7);
  EXPECT_EQ(combine(RedOp::avg, 3, 4), 7);  // avg sums; divide() finishes it
  EXPECT_EQ(combine(RedOp::prod, 3, -4), -12);
  EXPECT_EQ(combine(RedOp::max, 3, -4), 3);
  EXPECT_EQ(combine(RedOp::min, 3, -4), -4);
  EXPECT_EQ(divide(7, 2), 3);
  EXPECT_DOUBLE_EQ(divide(7.0, 2), 3.5);
  EXPECT_EQ(to_float(combine(RedOp::sum, to_float16(1.5f), to_float16(2.0f))), 3.5f);
  EXPECT_EQ(to_float(combine(RedOp::max, to_bfloat16(-1.0f), to_bfloat16(2.0f))), 2.0f);
  EXPECT_EQ(to_float(divide(to_float16(3.0f), 2)), 1.5f);
}

TEST(Combine, IntegersWrapAround) {
  EXPECT_EQ(combine<int8_t>(RedOp::sum, 127, 1), -128);
  EXPECT_EQ(combine<int32_t>(RedOp::sum, INT32_MAX, 1), INT32_MIN);
  EXPECT_EQ(combine<int32_t>(RedOp::prod, 1 << 30, 4), 0);
}

TEST(ReduceIntoCpu, MatchesElementFunctionForEveryType) {
  for (DataType type : kAllDataTypes) {
    for (RedOp op : kAllRedOps) {
      dispatch(type, [&](auto tag) {
        using T = decltype(tag);
        std::vector<T> acc(5), in(5);
        for (int i = 0; i < 5; ++i) {
          if constexpr (std::is_same_v<T, float16>) {
            acc[i] = to_float16(float(i - 2));
            in[i] = to_float16(float(3 - i));
          } else if constexpr (std::is_same_v<T, bfloat16>) {
            acc[i] = to_bfloat16(float(i - 2));
            in[i] = to_bfloat16(float(3 - i));
          } else {
            acc[i] = static_cast<T>(i - 2);
            in[i] = static_cast<T>(3 - i);
          }
        }
        std::vector<T> want = acc;
        for (int i = 0; i < 5; ++i) want[i] = combine(op, want[i], in[i]);
        reduce_into_cpu(acc.data(), in.data(), 5, type, op);
        EXPECT_EQ(std::memcmp(acc.data(), want.data(), sizeof(T) * 5), 0)
            << name_of(type) << " " << name_of(op);
      });
    }
  }
}

TEST(ReduceCpu, ThreeOperandFormMatchesReduceInto) {
  // Long enough for the vectorised body and its scalar tail, with values that make every op
  // differ (negative, zero and positive, integer-valued so that fp16 and bf16 are exact).
  const size_t n = 1029;
  for (DataType type : kAllDataTypes) {
    for (RedOp op : kAllRedOps) {
      dispatch(type, [&](auto tag) {
        using T = decltype(tag);
        auto value = [](int v) {
          if constexpr (std::is_same_v<T, float16>) return to_float16(float(v));
          else if constexpr (std::is_same_v<T, bfloat16>) return to_bfloat16(float(v));
          else return static_cast<T>(v);
        };
        std::vector<T> a(n), b(n), out(n);
        for (size_t i = 0; i < n; ++i) {
          a[i] = value(static_cast<int>(i % 11) - 5);
          b[i] = value(static_cast<int>(i % 7) - 3);
        }
        std::vector<T> want = a;
        for (size_t i = 0; i < n; ++i) want[i] = combine(op, want[i], b[i]);
        reduce_cpu(out.data(), a.data(), b.data(), n, type, op);
        EXPECT_EQ(std::memcmp(out.data(), want.data(), sizeof(T) * n), 0) << name_of(type) << " " << name_of(op);
        reduce_into_cpu(a.data(), b.data(), n, type, op);
        EXPECT_EQ(std::memcmp(a.data(), want.data(), sizeof(T) * n), 0) << name_of(type) << " " << name_of(op);
      });
    }
  }
}

TEST(ReduceCpu, SixteenBitTypesMatchTheElementFunctionOnEveryKindOfValue) {
  // Random bit patterns: normals, subnormals, zeros of both signs, infinities, quiet and
  // signalling NaNs, sums that overflow or round. The host widens and rounds these a block at a
  // time through the array conversions (fp16 and bf16 sums in one AVX2 pass where there is one); the
  // results must be the element function's, bit for bit, across block boundaries and in the
  // tail, with the output in place of either input. The one exception: which NaN a NaN operand
  // pair passes on is IEEE's to leave open, and even the element function's answer moves with
  // the compiler's choice of operand order (bf16 NaN + -NaN: -NaN at -O3, NaN at -O0), so a NaN
  // only has to be a NaN.
  std::mt19937 rng(17);
  const size_t n = 3 * 512 + 77;
  for (DataType type : {DataType::float16, DataType::bfloat16}) {
    dispatch(type, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
        std::vector<T> a(n), b(n);
        for (size_t i = 0; i < n; ++i) {
          a[i].bits = static_cast<uint16_t>(rng());
          b[i].bits = static_cast<uint16_t>(rng());
        }
        // And for certain, in the first vector: NaNs of opposite signs on both sides (whose sign
        // wins), a signalling NaN, inf - inf, the largest finite plus itself.
        const uint16_t nan = std::is_same_v<T, float16> ? 0x7e00 : 0x7fc0, snan = std::is_same_v<T, float16> ? 0x7c01 : 0x7f81;
        const uint16_t inf = std::is_same_v<T, float16> ? 0x7c00 : 0x7f80, top = std::is_same_v<T, float16> ? 0x7bff : 0x7f7f;
        const uint16_t first[][2] = {{nan, uint16_t(0x8000 | nan)}, {uint16_t(0x8000 | nan), snan}, {inf, uint16_t(0x8000 | inf)}, {top, top}};
        for (size_t i = 0; i < 4; ++i) {
          a[i].bits = first[i][0];
          b[i].bits = first[i][1];
        }
        // How many of `got` are neither want's bits nor, where want is a NaN, a NaN.
        auto differing = [](const std::vector<T>& got, const std::vector<T>& want) {
          size_t count = 0;
          for (size_t i = 0; i < got.size(); ++i)
            count += got[i].bits != want[i].bits && !(std::isnan(to_float(got[i])) && std::isnan(to_float(want[i])));
          return count;
        };
        size_t nans = 0;
        for (RedOp op : kAllRedOps) {
          std::vector<T> want(n), out(n), into_b = b;
          for (size_t i = 0; i < n; ++i) want[i] = combine(op, a[i], b[i]);
          for (const T& w : want) nans += std::isnan(to_float(w));
          reduce_cpu(out.data(), a.data(), b.data(), n, type, op);
          EXPECT_EQ(differing(out, want), 0u) << name_of(type) << " " << name_of(op);
          reduce_cpu(into_b.data(), a.data(), into_b.data(), n, type, op);
          EXPECT_EQ(differing(into_b, want), 0u) << name_of(type) << " " << name_of(op) << " into b";
        }
        EXPECT_LT(nans, n * std::size(kAllRedOps) / 10);  // NaN is the exception, not the rule
        std::vector<T> divided = a, want(n);
        for (size_t i = 0; i < n; ++i) want[i] = divide(a[i], 3);
        divide_cpu(divided.data(), n, type, 3);
        EXPECT_EQ(differing(divided, want), 0u) << name_of(type) << " divide";
      }
    });
  }
}

TEST(DivideCpu, FinishesAnAverage) {
  std::vector<int32_t> v = {6, -9, 12};
  divide_cpu(v.data(), 3, DataType::int32, 3);
  EXPECT_EQ(v, (std::vector<int32_t>{2, -3, 4}));
}

}  // namespace
}  // namespace sb
