#pragma once
// Compute jitter between ranks, which synchronous data-parallel training pays for at every step:
// a bucket's allreduce starts when its last rank has the bucket's gradients, so the step runs at
// the pace of its slowest rank, and the more ranks, the slower the slowest. Each rank's forward
// and backward of a step take f times their profile's times, f = 1 + cv z with z a standard
// normal drawn per rank and step; the step is then the profile's step with every time multiplied
// by F, the largest f over the ranks (ranks leave a step's last allreduce together, so steps do
// not carry lag over). E[F] grows as cv sqrt(2 ln N): about 1 + 2.6 cv at 128 ranks.
//
// A straggler is the other kind of spread: one rank (a slower node, a throttled GPU) that takes
// s times the others' time at every step. Its f is s (1 + cv z), so the step waits for it at every
// scale, unless many ranks' noise outruns it. A run of one rank has no straggler: it is the
// healthy baseline that speed-up is measured from.
#include <cstdint>
#include <functional>
#include <vector>

#include "collectives/buckets/backward_profile.hpp"
#include "sim/step_model.hpp"

namespace sb::sim {

// The largest cv sb-dryrun accepts: beyond it, f = 1 + cv z would be negative too often to mean
// anything (at 0.25, once in 30,000 draws; such f are taken as kSmallestFactor).
inline constexpr double kMostJitter = 0.25;
inline constexpr double kSmallestFactor = 0.01;

// UsageError unless 0 <= cv <= kMostJitter: the check of sb-buckets' and sb-dryrun's --jitter.
void require_jitter(double cv);

// The slowest straggler sb-dryrun prices: sb-train's --balance is the remedy well before it.
inline constexpr double kMostStraggler = 10;
// UsageError unless 1 <= s <= kMostStraggler: the check of sb-dryrun's --straggler.
void require_straggler(double s);

// A rank's factor for one step from its normal draw z: 1 + cv z, no less than kSmallestFactor.
inline double jitter_factor(double cv, double z) { return cv * z > kSmallestFactor - 1 ? 1 + cv * z : kSmallestFactor; }

// The slowest rank's factor F over simulated steps, binned: the step is priced once per bin, at
// the bin's mean F, and weighted by its share of the steps.
struct SlowestRankFactors {
  struct Bin {
    double factor = 1;  // the mean F of the steps in this bin
    double weight = 1;  // their share of the steps
  };
  std::vector<Bin> bins;  // ascending factor; one bin at 1.0 when cv is 0
  double mean = 1;        // E[F] over the steps
  double median = 1;      // the factor of the bin holding the median step
};

// F for `steps` steps of `nranks` ranks (a fixed seed: the same draws every run), binned in
// widths of bin_width (> 0), one rank a straggler of `straggler` when there are 2 or more. cv = 0
// gives F = straggler exactly (1 at one rank).
SlowestRankFactors slowest_rank_factors(double cv, int nranks, int steps, uint64_t seed, double bin_width,
                                        double straggler = 1);

// Steps drawn per scale by sb-dryrun (train and validate), and the width of the bins of F as a
// share of cv. A step is nearly linear in F within a bin: at 0.01 instead of 0.25 (25 times the
// bins), the demo's ResNet-50 profile over ethernet-100g at 8 and 128 ranks with a cv of 0.05
// gave the same steps to 0.01 ms.
inline constexpr int kJitterSteps = 4000;
inline constexpr double kJitterBinShare = 0.25;

// sb-train --balance's remedy for a straggler: each rank takes a share of the batch in proportion
// to its speed, so every rank computes for the same time, n / (n - 1 + 1/s) times a healthy rank's
// on an equal share (1 at one rank). The factors of such a run are the jitter's alone, times that.
double balanced_factor(int nranks, double straggler);
SlowestRankFactors scaled_factors(SlowestRankFactors factors, double by);

// The same with those: kJitterSteps steps seeded by nranks, bins of kJitterBinShare x cv.
inline SlowestRankFactors slowest_rank_factors(double cv, int nranks, double straggler = 1) {
  return slowest_rank_factors(cv, nranks, kJitterSteps, static_cast<uint64_t>(nranks), kJitterBinShare * cv,
                              straggler);
}

// The coefficient to give --jitter, from measured compute times by rank and step
// (`times[rank * steps + step]`, as sb-train's rank_compute_s): each time as a share of its step's
// mean over the ranks, so that what every rank shares (a slower batch) does not count, pooled over
// the steps (the first left out: warm-up) as a standard deviation with nranks - 1 degrees of
// freedom a step. 0 for fewer than 2 ranks or no usable step.
double between_rank_cv(const std::vector<double>& times, int nranks, size_t steps);

// The same times split in two: each rank's share that it keeps from step to step (a straggler's
// is above 1), and the spread around it that changes from step to step (jitter), so that
// sb-dryrun can be given both. Steps as between_rank_cv's.
struct RankSpread {
  std::vector<double> rank_shares;  // each rank's mean time as a share of its steps' mean over the ranks
  int slowest_rank = 0;
  double slowest_share = 1;
  double transient_cv = 0;    // around each rank's own share, pooled: (nranks - 1)(steps - 1) degrees of freedom
  double standard_error = 0;  // of a rank's share, from that spread: how far noise alone moves one
  // The slowest share is above 1 by more than kStragglerErrors standard errors (and 2 or more steps
  // were used), and by at least kLeastStragglerShare, and, over 8 or more steps, it is at least half
  // as far above 1 in each of kStragglerBlocks consecutive blocks of them: a rank slower at every
  // step, not one that was slow now and then or for a spell (another job on its node for a while,
  // which independent noise's standard error does not cover), nor one so little slower that at
  // scale the others' noise would hide it.
  bool persistent = false;
};
inline constexpr double kStragglerErrors = 4;
inline constexpr double kLeastStragglerShare = 1.01;
inline constexpr size_t kStragglerBlocks = 4;
RankSpread rank_spread(const std::vector<double>& times, int nranks, size_t steps);

// The profile with its forward, backward and every gradient's ready time multiplied by factor.
BackwardProfile slowed_profile(BackwardProfile profile, double factor);

// The step to expect: `predict` run once per bin on the profile slowed by the bin's factor, its
// times averaged by the bins' weights; its buckets, bucket times and negotiations are those of the
// median step's bin.
StepPrediction expected_step(const SlowestRankFactors& slowest, const BackwardProfile& profile,
                             const std::function<StepPrediction(const BackwardProfile&)>& predict);

}  // namespace sb::sim
