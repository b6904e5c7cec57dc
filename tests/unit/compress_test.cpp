// The compressors one by one (round trips, what they keep, unbiasedness of the stochastic ones)
// and bad parameters. Error feedback and the compressed allreduce are tested under MPI
// (tests/mpi/compressed_allreduce_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include "collectives/compress/compressor.hpp"
#include "collectives/compress/powersgd.hpp"
#include "collectives/compress/synthetic_gradient.hpp"
#include "common/usage_error.hpp"
#include "kernels/lowrank.hpp"
#include "kernels/threshold.hpp"
#include "kernels/topk.hpp"

namespace sb {
namespace {


std::vector<float> round_trip(Compressor& c, const std::vector<float>& g, uint64_t step = 0) {
  std::vector<unsigned char> payload;
  compress_alone(c, g.data(), g.size(), step, payload);
  std::vector<float> out(g.size(), 0.0f);
  c.decompress_add(payload.data(), g.size(), step, 1.0f, out.data());
  return out;
}

TEST(Compressors, Fp16RoundTripWithinHalfAnUlpAndBf16WithinTwoToTheMinusEight) {
  const std::vector<float> g = heavy_tailed_gradient(10000, 1);
  const auto half = round_trip(*make_compressor("fp16", {}), g);
  const auto brain = round_trip(*make_compressor("bf16", {}), g);
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::fabs(g[i]) < 6.2e-5f || std::fabs(g[i]) > 65504.0f) continue;  // fp16's normal range only
    EXPECT_LE(std::fabs(half[i] - g[i]), std::ldexp(std::fabs(g[i]), -11)) << i;
    EXPECT_LE(std::fabs(brain[i] - g[i]), std::ldexp(std::fabs(g[i]), -8)) << i;
  }
  EXPECT_EQ(make_compressor("fp16", {})->payload_bytes(10), 20u);
  EXPECT_EQ(round_trip(*make_compressor("none", {}), g), g);
}

TEST(Compressors, TopKKeepsExactlyTheKLargestMagnitudes) {
  const std::vector<float> g = heavy_tailed_gradient(5000, 2);
  CompressorParams params;
  params.ratio = 0.01;
  const auto out = round_trip(*make_compressor("topk", params), g);
  const std::vector<uint32_t> want = topk_reference(g.data(), g.size(), 50);
  size_t kept = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const bool chosen = std::binary_search(want.begin(), want.end(), static_cast<uint32_t>(i));
    EXPECT_EQ(out[i], chosen ? g[i] : 0.0f) << i;
    kept += out[i] != 0.0f;
  }
  EXPECT_EQ(kept, 50u);
}

TEST(Threshold, TheSampledThresholdIsTheQuantileAndTheSelectionEverythingAboveIt) {
  const std::vector<float> g = heavy_tailed_gradient(20000, 5);
  // With every value read, the threshold is the exact 200th magnitude.
  const float exact = sampled_threshold(g.data(), g.size(), 0.01, g.size(), 1);
  const std::vector<uint32_t> top = topk_reference(g.data(), g.size(), 200);
  float smallest = INFINITY;
  for (uint32_t i : top) smallest = std::min(smallest, std::fabs(g[i]));
  EXPECT_EQ(exact, smallest);
  std::vector<uint32_t> above;
  select_at_least(g.data(), g.size(), exact, above);
  EXPECT_EQ(above, top);  // no ties in this data
  // From a 2000-value sample the estimate lands near it.
  const float sampled = sampled_threshold(g.data(), g.size(), 0.01, 2000, 7);
  above.clear();
  select_at_least(g.data(), g.size(), sampled, above);
  EXPECT_GT(above.size(), 100u);
  EXPECT_LT(above.size(), 400u);
}

TEST(Threshold, SelectsEveryMagnitudeAtOrAboveTheThresholdAndEveryNan) {
  // Lengths around the scan's chunk of 16, so that hits fall in whole chunks and in the tail.
  const std::vector<float> specials = {0.0f, -0.0f, 0.5f, -0.5f, 1.0f, -2.0f, INFINITY, -INFINITY, std::nanf("")};
  std::mt19937 rng(9);
  for (size_t n : {size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{47}, size_t{1000}}) {
    std::vector<float> v(n);
    for (float& x : v) x = specials[rng() % specials.size()];
    for (float threshold : {0.0f, 0.5f, 1.0f, 2.0f, INFINITY}) {
      std::vector<uint32_t> want, got;
      for (size_t i = 0; i < n; ++i)
        if (std::fabs(v[i]) >= threshold || std::isnan(v[i])) want.push_back(static_cast<uint32_t>(i));
      select_at_least(v.data(), n, threshold, got);
      ASSERT_EQ(got, want) << "n=" << n << " threshold=" << threshold;
    }
  }
}

TEST(Threshold, SendsExactlyTheTopKWhenTheSampleOvershootsAndASubsetOfItOtherwise) {
  CompressorParams params;
  params.ratio = 0.01;
  for (unsigned seed : {2u, 3u, 4u}) {
    const std::vector<float> g = heavy_tailed_gradient(100000, seed);
    const auto out = round_trip(*make_compressor("threshold", params), g);
    const std::vector<uint32_t> want = topk_reference(g.data(), g.size(), 1000);
    size_t kept = 0, outside = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      if (out[i] == 0.0f) continue;
      ++kept;
      EXPECT_EQ(out[i], g[i]) << i;
      outside += !std::binary_search(want.begin(), want.end(), static_cast<uint32_t>(i));
    }
    EXPECT_EQ(outside, 0u) << "seed " << seed;
    EXPECT_EQ(kept, 1000u) << "seed " << seed;  // the 2x margin (and the retries): the sample overshoots
  }
  // A gradient where the sample cannot see the few large values: fewer than k are sent, and the
  // empty slots decode to nothing.
  std::vector<float> spiky(100000, 0.0f);
  for (size_t i = 0; i < 30; ++i) spiky[i * 3331] = 5.0f + static_cast<float>(i);
  const auto out = round_trip(*make_compressor("threshold", params), spiky);
  EXPECT_EQ(out, spiky);
}

TEST(Sign, MajorityVoteTakesTheSignMostRanksSentTimesTheirMeanMagnitude) {
  // Three ranks' payloads for four values; rank scales 1, 2 and 6 (mean 3).
  const auto sign = make_compressor("sign", {});
  const std::vector<std::vector<float>> ranks = {{1, -1, 1, -1}, {2, 2, -2, -2}, {-6, 6, 6, -6}};
  const size_t bytes = sign->payload_bytes(4);
  std::vector<unsigned char> payloads(3 * bytes);
  for (size_t r = 0; r < 3; ++r) sign->compress(ranks[r].data(), 4, 0, payloads.data() + r * bytes);
  std::vector<float> out(4, 99.0f);  // overwritten, not added to
  sign->aggregate(payloads.data(), 4, 0, 3, out.data());
  EXPECT_EQ(out, (std::vector<float>{3, 3, 3, -3}));  // votes +1, +1, +1, -3: the big rank is outvoted
  // Two ranks that disagree: a tie, 0.
  sign->aggregate(payloads.data(), 4, 0, 2, out.data());
  EXPECT_EQ(out, (std::vector<float>{1.5f, 0, 0, -1.5f}));
}

TEST(Compressors, DecodingWithAWeightAddsThatMultipleExactly) {
  // Error feedback subtracts what was sent with weight -1: the same bits as decoding and then
  // subtracting, for every kind of payload. And decompress, which overwrites (one pass for the
  // dense payloads), gives what decompress_add adds to zeros whatever `out` held (equal as floats:
  // +0 and -0 may differ). Ragged counts too: on an AVX-512 CPU, GCC fused the multiply and add
  // of QSGD's decoding in a loop's scalar tail but not in its body, and 7 values failed here,
  // until the build said -ffp-contract=off (an AVX2 CPU runs clones without FMA: no failure).
  for (size_t n : {3000, 3001, 3013, 3031, 7, 12, 19, 33, 70}) {
    const std::vector<float> g = heavy_tailed_gradient(n, n);
    for (std::string_view name : compressor_names()) {
      SCOPED_TRACE(std::string(name) + ", " + std::to_string(n) + " values");
      CompressorParams params;
      params.ratio = 0.05;
      auto c = make_compressor(name, params);
      std::vector<unsigned char> payload;
      compress_alone(*c, g.data(), g.size(), 0, payload);
      std::vector<float> decoded(g.size(), 0.0f), subtracted = g;
      c->decompress_add(payload.data(), g.size(), 0, 1.0f, decoded.data());
      c->decompress_add(payload.data(), g.size(), 0, -1.0f, subtracted.data());
      for (size_t i = 0; i < g.size(); ++i) ASSERT_EQ(subtracted[i], g[i] - decoded[i]) << "value " << i;
      std::vector<float> quarter(g.size(), 0.0f), overwritten(g.size(), 99.0f);
      c->decompress_add(payload.data(), g.size(), 0, 0.25f, quarter.data());
      c->decompress(payload.data(), g.size(), 0, 0.25f, overwritten.data());
      for (size_t i = 0; i < g.size(); ++i) ASSERT_EQ(overwritten[i], quarter[i]) << "value " << i;
    }
  }
}

TEST(Compressors, CompressWithFeedbackIsItsThreeStepsInOne) {
  // residual += gradient, encode, residual -= decoded: the blockwise forms (fp16 and bf16 in
  // one pass, sign and efsign in two, onebit chunk by chunk) give the three calls' payload and
  // residual bit for bit (across block boundaries of 512 and 2048 values and a ragged end); the
  // others are the three calls. Fresh compressors for each side: some keep state.
  const size_t n = 2 * 2048 + 512 + 77;
  const std::vector<float> g = heavy_tailed_gradient(n, 11), start = heavy_tailed_gradient(n, 12);
  // Each compressor as it comes, then with a bucket of two tensors (a scale per tensor for
  // TernGrad and QSGD without buckets).
  std::vector<std::pair<std::string_view, CompressorParams>> cases;
  for (std::string_view name : compressor_names()) {
    CompressorParams params;
    params.ratio = 0.05;
    cases.emplace_back(name, params);
    params.bucket = 0;
    params.tensors = {{2100, 0}, {n - 2100, 0}};
    if (name == "qsgd" || name == "terngrad") cases.emplace_back(name, params);
  }
  for (const auto& [name, params] : cases) {
    auto fused = make_compressor(name, params), reference = make_compressor(name, params);
    if (fused->rounds() > 1) continue;  // PowerSGD: error feedback after its last round instead
    for (uint64_t step = 0; step < 2; ++step) {
      std::vector<float> r1 = start, r2 = start;
      std::vector<unsigned char> p1(fused->payload_bytes(n)), p2(p1.size());
      fused->compress_with_feedback(r1.data(), g.data(), n, step, p1.data());
      for (size_t i = 0; i < n; ++i) r2[i] += g[i];
      reference->compress(r2.data(), n, step, p2.data());
      reference->decompress_add(p2.data(), n, step, -1.0f, r2.data());
      ASSERT_EQ(p1, p2) << name << " payload, step " << step;
      ASSERT_EQ(std::memcmp(r1.data(), r2.data(), n * sizeof(float)), 0) << name << " residual, step " << step;
    }
  }
}

TEST(Compressors, TheAggregateOverwritesWithTheAverageOfTheDecodedPayloads) {
  const std::vector<float> a = heavy_tailed_gradient(1000, 6), b = heavy_tailed_gradient(1000, 7);
  // An allreduce carrier: the summed payload (none's is the sum itself), decoded and averaged.
  std::vector<float> sum(a.size()), out(a.size(), 99.0f);
  for (size_t i = 0; i < a.size(); ++i) sum[i] = a[i] + b[i];
  make_compressor("none", {})->aggregate(reinterpret_cast<const unsigned char*>(sum.data()), a.size(), 0, 2, out.data());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(out[i], sum[i] * 0.5f) << i;
  // An allgather carrier: each rank's payload decoded, summed, then averaged.
  auto topk = make_compressor("topk", {});
  const size_t bytes = topk->payload_bytes(a.size());
  std::vector<unsigned char> payloads(2 * bytes);
  topk->compress(a.data(), a.size(), 0, payloads.data());
  topk->compress(b.data(), b.size(), 0, payloads.data() + bytes);
  std::vector<float> want(a.size(), 0.0f);
  topk->decompress_add(payloads.data(), a.size(), 0, 1.0f, want.data());
  topk->decompress_add(payloads.data() + bytes, a.size(), 0, 1.0f, want.data());
  std::fill(out.begin(), out.end(), 99.0f);
  topk->aggregate(payloads.data(), a.size(), 0, 2, out.data());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(out[i], want[i] * 0.5f) << i;
}

TEST(Compressors, RandomKDrawsTheSameIndicesOnEveryRankAndNewOnesEachStep) {
  const std::vector<float> g = heavy_tailed_gradient(1000, 3);
  CompressorParams a, b;
  a.ratio = b.ratio = 0.05;
  a.stream = 0;
  b.stream = 7;  // another rank: its own stream, the same shared seed
  auto on_rank0 = make_compressor("randomk", a), on_rank1 = make_compressor("randomk", b);
  auto nonzero = [](const std::vector<float>& v) {
    std::vector<size_t> at;
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i] != 0.0f) at.push_back(i);
    return at;
  };
  const auto step0 = nonzero(round_trip(*on_rank0, g, 0));
  EXPECT_EQ(step0.size(), 50u);
  EXPECT_EQ(step0, nonzero(round_trip(*on_rank1, g, 0)));
  EXPECT_NE(step0, nonzero(round_trip(*on_rank0, g, 1)));
}

TEST(Compressors, EfSignSendsSignsScaledByTheMeanMagnitude) {
  const std::vector<float> g = {1.0f, -3.0f, 0.5f, -0.5f, 0.0f};
  const auto out = round_trip(*make_compressor("efsign", {}), g);
  EXPECT_EQ(out, (std::vector<float>{1.0f, -1.0f, 1.0f, -1.0f, 1.0f}));
  EXPECT_EQ(make_compressor("efsign", {})->payload_bytes(17), 4u + 3u);
}

// 1-bit SGD: each chunk of 512 decodes to the mean of its non-negative values or of its negative
// ones; a chunk with no negative value sends 0 as that mean and never uses it.
TEST(Compressors, OneBitDecodesToEachChunksPositiveAndNegativeMeans) {
  std::vector<float> g(600);
  for (size_t i = 0; i < 512; ++i) g[i] = i % 2 ? -static_cast<float>(i % 4) : static_cast<float>(i % 8);  // chunk 0
  for (size_t i = 512; i < 600; ++i) g[i] = 2.0f + static_cast<float>(i % 2);                                // chunk 1
  double pos0 = 0, neg0 = 0;
  size_t npos0 = 0, nneg0 = 0;
  for (size_t i = 0; i < 512; ++i) (g[i] < 0 ? (neg0 += g[i], ++nneg0) : (pos0 += g[i], ++npos0));
  const auto out = round_trip(*make_compressor("onebit", {}), g);
  for (size_t i = 0; i < 512; ++i)
    EXPECT_EQ(out[i], g[i] < 0 ? static_cast<float>(neg0 / nneg0) : static_cast<float>(pos0 / npos0)) << i;
  for (size_t i = 512; i < 600; ++i) EXPECT_EQ(out[i], 2.5f) << i;
  EXPECT_EQ(make_compressor("onebit", {})->payload_bytes(600), 2u * 2u * 4u + 75u);
}

// Stochastic rounding is unbiased: the mean of many decodings approaches the gradient; for
// TernGrad, the gradient clipped at 2.5 standard deviations (its scale), beyond which values
// decode to +-scale every time.
TEST(Compressors, QsgdAndTernGradAreUnbiased) {
  const std::vector<float> g = heavy_tailed_gradient(64, 4);
  double sum = 0, norm = 0, largest = 0;
  for (float x : g) sum += x, norm += static_cast<double>(x) * x, largest = std::max(largest, std::fabs(static_cast<double>(x)));
  const double mean_g = sum / g.size();
  const double clip = std::min(largest, 2.5 * std::sqrt(norm / g.size() - mean_g * mean_g));
  size_t clipped = 0;
  for (float x : g) clipped += std::fabs(x) > clip;
  ASSERT_GT(clipped, 0u);  // heavy tails: some values lie beyond the clip
  for (const char* name : {"qsgd", "terngrad"}) {
    const bool qsgd = std::string(name) == "qsgd";
    CompressorParams params;
    params.levels = 4;
    params.bucket = 16;  // QSGD: four buckets, each under its own norm (TernGrad has one scale)
    auto c = make_compressor(name, params);
    std::vector<double> mean(g.size(), 0.0);
    const int steps = 20000;
    for (int step = 0; step < steps; ++step) {
      const auto out = round_trip(*c, g, static_cast<uint64_t>(step));
      for (size_t i = 0; i < g.size(); ++i) mean[i] += out[i] / steps;
    }
    // One decoding is off by at most one level (norm / s, or the clip); the mean of 20000 by
    // about that / sqrt(20000); allow five times it.
    const double level = qsgd ? std::sqrt(norm) / 4 : clip;
    for (size_t i = 0; i < g.size(); ++i) {
      const double want = qsgd ? g[i] : std::clamp(static_cast<double>(g[i]), -clip, clip);
      EXPECT_NEAR(mean[i], want, 5 * level / std::sqrt(steps)) << name << " " << i;
    }
  }
}

TEST(Compressors, TernGradSendsValuesThatDoNotVary) {
  // One value, or a constant tensor: no spread to clip at, so the scale is the max and every
  // value decodes to itself (a clip at 2.5 x 0 would send nothing, every step).
  auto terngrad = make_compressor("terngrad", {});
  for (const std::vector<float>& g : {std::vector<float>{3.0f}, std::vector<float>(100, -2.5f)}) {
    const auto out = round_trip(*terngrad, g);
    for (size_t i = 0; i < g.size(); ++i) ASSERT_EQ(out[i], g[i]) << g.size() << " " << i;
  }
}

// Given the tensors of a fused buffer, TernGrad (and QSGD without buckets) scale each tensor on
// its own, as the papers scale each layer: a tensor of small values next to one of large values
// keeps its own scale instead of rounding to 0 against the other's; and each tensor rounds with
// its own uniforms (two equal tensors do not round alike).
TEST(Compressors, TernGradAndQsgdWithoutBucketsScaleEachTensor) {
  std::vector<float> g(50, 100.0f);
  g.resize(120, -0.01f);
  CompressorParams params;
  params.tensors = {{50, 1}, {70, 1}};
  const auto per_tensor = make_compressor("terngrad", params);
  EXPECT_EQ(per_tensor->payload_bytes(g.size()), 2 * sizeof(float) + 120);
  EXPECT_EQ(round_trip(*per_tensor, g), g);  // each tensor constant: its scale is its value
  const auto whole = round_trip(*make_compressor("terngrad", {}), g);
  size_t lost = 0;
  for (size_t i = 50; i < 120; ++i) lost += whole[i] != g[i];
  EXPECT_GT(lost, 35u);  // against one scale of 100, -0.01 sends -100 once in 10,000 times
  // QSGD with --qsgd-bucket 0: the head holds each tensor's norm.
  params.bucket = 0;
  const auto qsgd = make_compressor("qsgd", params);
  std::vector<unsigned char> payload;
  compress_alone(*qsgd, g.data(), g.size(), 0, payload);
  ASSERT_EQ(payload.size(), 2 * sizeof(float) + 120);
  float norms[2];
  std::memcpy(norms, payload.data(), sizeof norms);
  EXPECT_FLOAT_EQ(norms[0], 100.0f * std::sqrt(50.0f));
  EXPECT_FLOAT_EQ(norms[1], 0.01f * std::sqrt(70.0f));
  // Two equal tensors of values between levels: their roundings differ.
  std::vector<float> twice = heavy_tailed_gradient(1000, 8);
  twice.insert(twice.end(), twice.begin(), twice.end());
  params.tensors = {{1000, 0}, {1000, 0}};
  compress_alone(*make_compressor("qsgd", params), twice.data(), twice.size(), 0, payload);
  const unsigned char* levels = payload.data() + 2 * sizeof(float);
  EXPECT_NE(std::memcmp(levels, levels + 1000, 1000), 0);
  // Tensors that do not add up to the count.
  EXPECT_THROW(compress_alone(*make_compressor("terngrad", params), g.data(), g.size(), 0, payload),
               std::invalid_argument);
}

TEST(Compressors, QsgdScalesEachBucketByItsOwnNormAndSoErrsLess) {
  // [one fp32 norm per bucket][a signed byte per value], the last bucket short; bucket 0 is one
  // norm for the whole tensor. Per-bucket norms bound the error by the bucket's size rather than
  // the tensor's (Alistarh et al. 2017): on 64K heavy-tailed values, buckets of 512 err several
  // times less than one norm.
  const std::vector<float> g = heavy_tailed_gradient(65536 + 300, 5);
  CompressorParams params;
  for (size_t bucket : {size_t{0}, size_t{512}}) {
    params.bucket = bucket;
    auto qsgd = make_compressor("qsgd", params);
    const size_t scales = bucket ? (g.size() + bucket - 1) / bucket : 1, span = bucket ? bucket : g.size();
    ASSERT_EQ(qsgd->payload_bytes(g.size()), scales * sizeof(float) + g.size());
    std::vector<unsigned char> payload(qsgd->payload_bytes(g.size()));
    qsgd->compress(g.data(), g.size(), 0, payload.data());
    for (size_t b = 0; b < scales; ++b) {
      double sum = 0;
      for (size_t i = b * span; i < std::min(g.size(), (b + 1) * span); ++i) sum += static_cast<double>(g[i]) * g[i];
      float norm;
      std::memcpy(&norm, payload.data() + b * sizeof(float), sizeof norm);
      ASSERT_NEAR(norm, std::sqrt(sum), 1e-6 * std::sqrt(sum)) << bucket << " " << b;
    }
  }
  auto relative_error = [&](size_t bucket) {
    params.bucket = bucket;
    const auto out = round_trip(*make_compressor("qsgd", params), g);
    double error = 0, norm = 0;
    for (size_t i = 0; i < g.size(); ++i) error += (out[i] - g[i]) * (out[i] - g[i]), norm += g[i] * g[i];
    return std::sqrt(error / norm);
  };
  EXPECT_LT(relative_error(512), relative_error(0) / 3);
  // A bucket past the tensor's size is one norm for all of it, as 0 is (the largest too, whose
  // count + bucket would wrap).
  for (size_t huge : {g.size() + 1, SIZE_MAX}) {
    params.bucket = huge;
    EXPECT_EQ(make_compressor("qsgd", params)->payload_bytes(g.size()), sizeof(float) + g.size()) << huge;
    EXPECT_EQ(relative_error(huge), relative_error(0)) << huge;
  }
}

TEST(Compressors, BadParametersAreUsageErrors) {
  CompressorParams params;
  EXPECT_THROW(make_compressor("gzip", params), UsageError);
  params.ratio = 0;
  EXPECT_THROW(make_compressor("topk", params), UsageError);
  params.ratio = 1.5;
  EXPECT_THROW(make_compressor("topk", params), UsageError);
  params.ratio = 0.1;
  params.levels = 0;
  EXPECT_THROW(make_compressor("qsgd", params), UsageError);
  params.levels = 128;
  EXPECT_THROW(make_compressor("qsgd", params), UsageError);
  params.levels = 16;
  params.rank = 0;
  EXPECT_THROW(make_compressor("powersgd", params), UsageError);
}

}  // namespace
}  // namespace sb

namespace sb {
namespace {

TEST(LowRank, ProductsAndOrthonormalisationMatchTheNaiveOnes) {
  const size_t n = 7, cols = 5, r = 3;
  std::vector<float> m(n * cols), q(cols * r), p(n * r);
  for (size_t i = 0; i < m.size(); ++i) m[i] = static_cast<float>((i * 7) % 11) - 5.0f;
  for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<float>((i * 3) % 5) - 2.0f;
  matmul_cpu(m.data(), n, cols, q.data(), r, p.data());
  for (size_t i = 0; i < n; ++i)
    for (size_t c = 0; c < r; ++c) {
      float want = 0;
      for (size_t j = 0; j < cols; ++j) want += m[i * cols + j] * q[j * r + c];
      EXPECT_EQ(p[i * r + c], want);  // small integers: exact
    }
  std::vector<float> back(cols * r);
  matmul_transposed_cpu(m.data(), n, cols, p.data(), r, back.data());
  for (size_t j = 0; j < cols; ++j)
    for (size_t c = 0; c < r; ++c) {
      float want = 0;
      for (size_t i = 0; i < n; ++i) want += m[i * cols + j] * p[i * r + c];
      EXPECT_EQ(back[j * r + c], want);
    }
  orthonormalise_columns_cpu(p.data(), n, r);
  for (size_t a = 0; a < r; ++a)
    for (size_t b = 0; b < r; ++b) {
      double dot = 0;
      for (size_t i = 0; i < n; ++i) dot += static_cast<double>(p[i * r + a]) * p[i * r + b];
      EXPECT_NEAR(dot, a == b ? 1.0 : 0.0, 1e-6) << a << "," << b;
    }
}

TEST(PowerSgd, RecoversAMatrixOfItsRankInOneStepAndSendsItsFactors) {
  // A 64 x 64 matrix of rank 2, as 4096 flat values: rank-2 PowerSGD rebuilds it (P spans its
  // columns, and P P^T M = M), sending (64 + 64) x 2 values.
  const size_t n = 64;
  std::vector<float> g(n * n);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j)
      g[i * n + j] = std::sin(0.3f * static_cast<float>(i)) * std::cos(0.2f * static_cast<float>(j)) +
                     0.5f * static_cast<float>(i % 3) * static_cast<float>(j % 5);
  CompressorParams params;
  params.rank = 2;
  const auto powersgd = make_compressor("powersgd", params);
  EXPECT_EQ(powersgd->payload_bytes(g.size()), (n + n) * 2 * sizeof(float));
  const auto out = round_trip(*powersgd, g);
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(out[i], g[i], 1e-4f * (1 + std::fabs(g[i]))) << i;
  // Rank 1 cannot: something is left out.
  params.rank = 1;
  const auto rank1 = round_trip(*make_compressor("powersgd", params), g);
  double error = 0;
  for (size_t i = 0; i < g.size(); ++i) error += std::fabs(rank1[i] - g[i]);
  EXPECT_GT(error, 1.0);
}


// A fused bucket is compressed tensor by tensor: every P in round 0, every Q in round 1 followed
// by the tensors sent as they are (vectors, and matrices whose factors would not be under half
// their size); a tensor of unknown shape is viewed near-square.
TEST(PowerSgd, LayoutCompressesEachMatrixAndSendsTheRestAsTheyAre) {
  const std::vector<TensorView> tensors = {{64 * 147, 64}, {64, 1}, {10 * 4, 10}, {1000, 0}};
  const PowerSgdLayout l = powersgd_layout(tensors, 64 * 147 + 64 + 40 + 1000, 4);
  ASSERT_EQ(l.blocks.size(), 4u);
  const PowerSgdBlock &conv = l.blocks[0], &bias = l.blocks[1], &small = l.blocks[2], &unknown = l.blocks[3];
  EXPECT_TRUE(conv.compressed());
  EXPECT_EQ(conv.rows, 64u);
  EXPECT_EQ(conv.cols, 147u);
  EXPECT_EQ(conv.r, 4u);
  EXPECT_FALSE(bias.compressed());
  EXPECT_FALSE(small.compressed());  // (10 + 4) x 4 x 2 = 112 is not under 40
  EXPECT_TRUE(unknown.compressed());  // 32 x 32, its last 24 values zero
  EXPECT_EQ(unknown.rows, 32u);
  EXPECT_EQ(unknown.cols, 32u);
  EXPECT_TRUE(unknown.padded());
  EXPECT_EQ(unknown.offset, 64u * 147 + 64 + 40);
  EXPECT_EQ(l.p_floats, (64u + 32) * 4);
  EXPECT_EQ(l.q_floats, (147u + 32) * 4);
  EXPECT_EQ(unknown.p_offset, 64u * 4);
  EXPECT_EQ(unknown.q_offset, 147u * 4);
  EXPECT_EQ(bias.q_offset, l.q_floats);
  EXPECT_EQ(small.q_offset, l.q_floats + 64);
  EXPECT_EQ(l.round1_floats, l.q_floats + 64 + 40);
  CompressorParams params;
  params.tensors = tensors;
  EXPECT_EQ(make_compressor("powersgd", params)->payload_bytes(64 * 147 + 64 + 40 + 1000),
            (l.p_floats + l.round1_floats) * sizeof(float));
  // Tensors that do not add up to the count, or a count that is not whole rows.
  EXPECT_THROW(powersgd_layout(tensors, 100, 4), std::invalid_argument);
  EXPECT_THROW(powersgd_layout({{100, 3}}, 100, 4), std::invalid_argument);
  // No tensors given: one of unknown shape, as before.
  EXPECT_EQ(powersgd_layout({}, 4096, 2).blocks.size(), 1u);
  EXPECT_EQ(powersgd_layout({}, 4096, 2).blocks[0].cols, 64u);
}

// The device's one-launch tables: the runs put every uncompressed tensor where the layout says
// (bias and small are adjacent in the values and in round 1, so they go as one run), and the
// factors are the compressed blocks' P's.
TEST(PowerSgd, DeviceTablesMoveWhatTheLayoutSays) {
  const std::vector<TensorView> tensors = {{64 * 147, 64}, {64, 1}, {10 * 4, 10}, {1000, 0}, {3, 1}};
  const size_t count = 64 * 147 + 64 + 40 + 1000 + 3;
  const PowerSgdLayout l = powersgd_layout(tensors, count, 4);
  const std::vector<FloatRun> runs = powersgd_uncompressed_runs(l);
  EXPECT_EQ(runs, (std::vector<FloatRun>{{64 * 147, l.q_floats, 104}, {count - 3, l.q_floats + 104, 3}}));
  std::vector<float> values(count), by_blocks(l.round1_floats, -1.0f), by_runs(l.round1_floats, -1.0f);
  for (size_t i = 0; i < count; ++i) values[i] = static_cast<float>(i);
  for (const PowerSgdBlock& b : l.blocks)
    if (!b.compressed()) std::copy_n(values.begin() + b.offset, b.count, by_blocks.begin() + b.q_offset);
  for (const FloatRun& run : runs) std::copy_n(values.begin() + run.from, run.count, by_runs.begin() + run.to);
  EXPECT_EQ(by_runs, by_blocks);
  const std::vector<FactorView> factors = powersgd_factors(l);
  ASSERT_EQ(factors.size(), 2u);
  EXPECT_EQ(factors[0].offset, 0u);
  EXPECT_EQ(factors[0].rows, 64u);
  EXPECT_EQ(factors[1].offset, l.blocks[3].p_offset);
  EXPECT_EQ(factors[1].rows, 32u);
  EXPECT_EQ(factors[1].r, 4u);
}

// Two rank-2 matrices and a vector fused in one buffer: compressed tensor by tensor at rank 2
// they come back whole (and the vector bit for bit); viewed as one near-square matrix they do not.
TEST(PowerSgd, PerTensorMatricesRecoverLowRankTensorsOfAFusedBucket) {
  const size_t a_rows = 48, a_cols = 36, b_rows = 20, b_cols = 90, v = 33;
  std::vector<float> g;
  for (size_t i = 0; i < a_rows; ++i)
    for (size_t j = 0; j < a_cols; ++j)
      g.push_back(std::sin(0.3f * static_cast<float>(i)) * std::cos(0.2f * static_cast<float>(j)) +
                  0.25f * static_cast<float>(i % 3) * static_cast<float>(j % 5));
  for (size_t i = 0; i < v; ++i) g.push_back(0.1f * static_cast<float>(i) - 1.3f);
  for (size_t i = 0; i < b_rows; ++i)
    for (size_t j = 0; j < b_cols; ++j)
      g.push_back(std::cos(0.7f * static_cast<float>(i)) * std::sin(0.05f * static_cast<float>(j)) -
                  0.5f * static_cast<float>(i % 2) * static_cast<float>(j % 7));
  CompressorParams params;
  params.rank = 2;
  params.tensors = {{a_rows * a_cols, a_rows}, {v, 1}, {b_rows * b_cols, b_rows}};
  const auto per_tensor = make_compressor("powersgd", params);
  EXPECT_EQ(per_tensor->payload_bytes(g.size()), ((a_rows + a_cols + b_rows + b_cols) * 2 + v) * sizeof(float));
  const auto out = round_trip(*per_tensor, g);
  double largest = 0;
  for (float x : g) largest = std::max(largest, static_cast<double>(std::fabs(x)));
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(out[i], g[i], 1e-5 * largest) << i;
  for (size_t i = a_rows * a_cols; i < a_rows * a_cols + v; ++i) EXPECT_EQ(out[i], g[i]) << i;
  params.tensors.clear();
  const auto fused = round_trip(*make_compressor("powersgd", params), g);
  double worst = 0;
  for (size_t i = 0; i < g.size(); ++i) worst = std::max(worst, static_cast<double>(std::fabs(fused[i] - g[i])));
  EXPECT_GT(worst, 0.05 * largest);
}

}  // namespace
}  // namespace sb
