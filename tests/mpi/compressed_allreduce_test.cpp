// The compressed allreduce at 1..5 ranks: every rank ends with the average of all ranks' decoded
// payloads (gathered here and averaged naively), or for signSGD their majority vote; and error
// feedback's bookkeeping on each rank
// alone (MPI_COMM_SELF): over many steps, what was sent plus the residual is everything given.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string_view>
#include <vector>

#include "collectives/compress/compressed_allreduce.hpp"
#include "collectives/compress/ef_convergence.hpp"
#include "collectives/compress/synthetic_gradient.hpp"

namespace sb {
namespace {


// Values of `g` that are not the average of every rank's decoded payload (gathered and summed in
// rank order in double), or for signSGD their majority vote.
size_t wrong_against_the_decoded_payloads(std::string_view name, const CompressedAllreduce& allreduce,
                                          const std::vector<float>& g) {
  int nranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const size_t n = g.size();
  std::vector<float> all(n * static_cast<size_t>(nranks));
  MPI_Allgather(allreduce.sent().data(), static_cast<int>(n), MPI_FLOAT, all.data(), static_cast<int>(n), MPI_FLOAT,
                MPI_COMM_WORLD);
  // PowerSGD's result is P (sum of Q_i)^T / ranks, the reference the sum of the P Q_i^T: the
  // same up to the rounding of r-term dot products, relative to the largest decoded value.
  double largest = 0;
  for (float sent : all) largest = std::max(largest, static_cast<double>(std::fabs(sent)));
  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i) {
    double sum = 0, magnitude = 0;
    int votes = 0;
    for (int r = 0; r < nranks; ++r) {
      const float sent = all[static_cast<size_t>(r) * n + i];
      sum += sent;
      magnitude += std::fabs(sent);
      votes += sent < 0 ? -1 : 1;
    }
    if (name == "sign") {  // the sign most ranks sent, times their mean magnitude; 0 on a tie
      const float mean = static_cast<float>(magnitude / nranks);
      if (g[i] != (votes > 0 ? mean : votes < 0 ? -mean : 0.0f)) ++wrong;
      continue;
    }
    // fp16/bf16 payloads are summed in their own precision by the allreduce, one rounding
    // per rank; the others in fp32.
    const double unit = name == "fp16" ? 0x1p-10 : name == "bf16" ? 0x1p-7 : 0x1p-22;
    const double tolerance = unit * magnitude + (name == "powersgd" ? 0x1p-18 * largest : 0.0);
    if (std::fabs(g[i] - sum / nranks) > tolerance) ++wrong;
  }
  return wrong;
}

// Three steps of `name` on n values of this rank's own heavy-tailed gradients, each checked
// against the decoded payloads; with and without error feedback.
void expect_the_average_of_the_decoded_payloads(std::string_view name, CompressorParams params, size_t n) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  params.stream = static_cast<uint64_t>(rank);
  for (bool error_feedback : {false, true}) {
    CompressedAllreduce allreduce(make_compressor(name, params), error_feedback, MPI_COMM_WORLD);
    allreduce.keep_sent();
    for (uint64_t step = 0; step < 3; ++step) {
      std::vector<float> g = heavy_tailed_gradient(n, 10 * static_cast<unsigned>(rank) + static_cast<unsigned>(step));
      allreduce.run(g.data(), n, step);
      EXPECT_EQ(wrong_against_the_decoded_payloads(name, allreduce, g), 0u)
          << name << (error_feedback ? " with error feedback" : "") << " step " << step;
    }
  }
}

TEST(CompressedAllreduce, EveryRankGetsTheAverageOfTheDecodedPayloads) {
  CompressorParams params;
  params.ratio = 0.03;
  for (std::string_view name : compressor_names()) expect_the_average_of_the_decoded_payloads(name, params, 4097);
}

// The compressors that treat a bucket tensor by tensor, given its tensors (a matrix, a vector, a
// matrix too small to compress, one of unknown shape): PowerSGD, each matrix with its own factors;
// TernGrad and QSGD without buckets, each tensor with its own scale. The same average.
TEST(CompressedAllreduce, PerTensorCompressorsGiveTheAverageOfTheDecodedPayloads) {
  CompressorParams params;
  params.bucket = 0;
  params.tensors = {{64 * 36, 64}, {64, 1}, {6 * 5, 6}, {1000, 0}};
  for (const char* name : {"powersgd", "terngrad", "qsgd"})
    expect_the_average_of_the_decoded_payloads(name, params, 64 * 36 + 64 + 30 + 1000);
}

// Without keep_sent() none sums the gradient in place, with no payload: the same bits as the
// payload kept and summed into a buffer of its own.
TEST(CompressedAllreduce, NoneSummedInPlaceGivesTheSameBitsAsItsPayload) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  CompressedAllreduce in_place(make_compressor("none", {}), true, MPI_COMM_WORLD);
  CompressedAllreduce kept(make_compressor("none", {}), true, MPI_COMM_WORLD);
  kept.keep_sent();
  for (uint64_t step = 0; step < 3; ++step) {
    std::vector<float> a = heavy_tailed_gradient(4097, 10 * static_cast<unsigned>(rank) + static_cast<unsigned>(step));
    std::vector<float> b = a;
    in_place.run(a.data(), a.size(), step);
    kept.run(b.data(), b.size(), step);
    EXPECT_EQ(a, b) << "step " << step;
    EXPECT_EQ(kept.sent().size(), a.size());
  }
}

TEST(ErrorFeedback, SentPlusResidualAddsUpToEveryGradientGiven) {
  // On this rank alone.
  for (const char* name :
       {"topk", "threshold", "randomk", "sign", "efsign", "onebit", "qsgd", "terngrad", "powersgd", "fp16"}) {
    CompressorParams params;
    params.ratio = 0.02;
    CompressedAllreduce allreduce(make_compressor(name, params), /*error_feedback=*/true, MPI_COMM_SELF);
    allreduce.keep_sent();
    const size_t n = 3000;
    std::vector<double> given(n, 0.0), sent(n, 0.0);
    for (uint64_t step = 0; step < 25; ++step) {
      std::vector<float> g = heavy_tailed_gradient(n, 100 + static_cast<unsigned>(step));
      for (size_t i = 0; i < n; ++i) given[i] += g[i];
      allreduce.run(g.data(), n, step);
      for (size_t i = 0; i < n; ++i) {
        sent[i] += allreduce.sent()[i];
        EXPECT_EQ(g[i], allreduce.sent()[i]);  // one rank: the average is what it sent
      }
    }
    double worst = 0, scale = 0;
    for (size_t i = 0; i < n; ++i) {
      worst = std::max(worst, std::fabs(sent[i] + allreduce.residual()[i] - given[i]));
      scale = std::max(scale, std::fabs(given[i]));
    }
    EXPECT_LE(worst, 1e-5 * scale * 25) << name;  // fp32 rounding of the running sums only
  }
}

TEST(ErrorFeedback, ALosslessCompressorKeepsNoResidualAndSendsTheGradientAsItIs) {
  // none decodes to what it encoded: error feedback would keep zeros, at two passes a step.
  CompressedAllreduce allreduce(make_compressor("none", {}), /*error_feedback=*/true, MPI_COMM_SELF);
  for (uint64_t step = 0; step < 3; ++step) {
    std::vector<float> g = heavy_tailed_gradient(1000, 7 + static_cast<unsigned>(step));
    const std::vector<float> given = g;
    allreduce.run(g.data(), g.size(), step);
    EXPECT_EQ(g, given) << "step " << step;
    EXPECT_TRUE(allreduce.residual().empty());
  }
}

}  // namespace
}  // namespace sb

namespace sb {
namespace {

TEST(EfConvergence, UncompressedDescentSetsTheTargetAndErrorFeedbackReachesIt) {
  ConvergenceSettings settings;
  settings.reference_steps = 100;
  settings.max_steps = 1000;
  CompressorParams params;
  const ConvergenceResult none = ef_convergence("none", params, false, settings, MPI_COMM_WORLD);
  EXPECT_GE(none.steps, 1);
  EXPECT_LE(none.steps, 100);  // the target is its own loss at 100 steps, plus 1%
  EXPECT_LE(none.final_loss, none.target_loss);
  params.ratio = 0.1;
  for (const char* name : {"efsign", "topk"}) {
    const ConvergenceResult r = ef_convergence(name, params, true, settings, MPI_COMM_WORLD);
    EXPECT_DOUBLE_EQ(r.target_loss, none.target_loss) << name;
    EXPECT_GT(r.steps, 0) << name;
    EXPECT_LE(r.steps, 300) << name;
  }
  // Top-k at 10% without error feedback drops 90% of every gradient for good: never as close.
  const ConvergenceResult dropped = ef_convergence("topk", params, false, settings, MPI_COMM_WORLD);
  EXPECT_TRUE(dropped.steps == ConvergenceResult::kNotReached || dropped.steps > 300) << dropped.steps;
}

}  // namespace
}  // namespace sb
