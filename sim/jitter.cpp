#include "sim/jitter.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "common/usage_error.hpp"

namespace sb::sim {

void require_jitter(double cv) {
  if (!(cv >= 0 && cv <= kMostJitter))  // NaN too
    throw UsageError("--jitter must be from 0 to 0.25 (a coefficient of variation: 0.02 is 2%)");
}

void require_straggler(double s) {
  if (!(s >= 1 && s <= kMostStraggler))  // NaN too
    throw UsageError("--straggler must be from 1 to 10 (one rank's time per step over the others': 1.2 is 20% slower)");
}

SlowestRankFactors slowest_rank_factors(double cv, int nranks, int steps, uint64_t seed, double bin_width,
                                        double straggler) {
  SlowestRankFactors factors;
  if (nranks < 2) straggler = 1;
  if (cv <= 0 || steps < 1 || nranks < 1) {
    factors.bins = {{straggler, 1.0}};
    factors.mean = factors.median = straggler;
    return factors;
  }
  std::mt19937_64 engine(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  std::vector<double> slowest(static_cast<size_t>(steps));
  for (double& step : slowest) {
    step = 0;
    for (int r = 0; r < nranks; ++r) step = std::max(step, (r == 0 ? straggler : 1.0) * jitter_factor(cv, z(engine)));
  }
  std::map<long long, std::pair<double, int>> by_bin;  // bin index -> (sum of F, steps)
  double sum = 0;
  for (double f : slowest) {
    auto& [total, count] = by_bin[std::llround(std::floor(f / bin_width))];
    total += f;
    ++count;
    sum += f;
  }
  factors.mean = sum / steps;
  int seen = 0;
  bool median_found = false;
  for (const auto& [index, bin] : by_bin) {
    factors.bins.push_back({bin.first / bin.second, static_cast<double>(bin.second) / steps});
    seen += bin.second;
    if (!median_found && 2 * seen >= steps) {
      factors.median = factors.bins.back().factor;
      median_found = true;
    }
  }
  return factors;
}

double between_rank_cv(const std::vector<double>& times, int nranks, size_t steps) {
  if (nranks < 2 || times.size() < static_cast<size_t>(nranks) * steps) return 0;
  double squares = 0;
  size_t freedom = 0;
  for (size_t step = steps > 1 ? 1 : 0; step < steps; ++step) {
    double mean = 0;
    for (int r = 0; r < nranks; ++r) mean += times[static_cast<size_t>(r) * steps + step];
    mean /= nranks;
    if (!(mean > 0)) continue;
    for (int r = 0; r < nranks; ++r) {
      const double deviation = times[static_cast<size_t>(r) * steps + step] / mean - 1;
      squares += deviation * deviation;
    }
    freedom += static_cast<size_t>(nranks - 1);
  }
  return freedom > 0 ? std::sqrt(squares / static_cast<double>(freedom)) : 0;
}

double balanced_factor(int nranks, double straggler) {
  if (nranks < 2) return 1;
  return nranks / (nranks - 1 + 1 / straggler);
}

SlowestRankFactors scaled_factors(SlowestRankFactors factors, double by) {
  for (SlowestRankFactors::Bin& bin : factors.bins) bin.factor *= by;
  factors.mean *= by;
  factors.median *= by;
  return factors;
}

RankSpread rank_spread(const std::vector<double>& times, int nranks, size_t steps) {
  RankSpread spread;
  spread.rank_shares.assign(static_cast<size_t>(std::max(nranks, 0)), 1.0);
  if (nranks < 2 || times.size() < static_cast<size_t>(nranks) * steps) return spread;
  // Each usable step's times as shares of its mean over the ranks.
  std::vector<std::vector<double>> shares;  // [step][rank]
  for (size_t step = steps > 1 ? 1 : 0; step < steps; ++step) {
    double mean = 0;
    for (int r = 0; r < nranks; ++r) mean += times[static_cast<size_t>(r) * steps + step];
    mean /= nranks;
    if (!(mean > 0)) continue;
    std::vector<double>& row = shares.emplace_back();
    for (int r = 0; r < nranks; ++r) row.push_back(times[static_cast<size_t>(r) * steps + step] / mean);
  }
  const size_t used = shares.size();
  if (used == 0) return spread;
  for (int r = 0; r < nranks; ++r) {
    double sum = 0;
    for (const std::vector<double>& row : shares) sum += row[static_cast<size_t>(r)];
    spread.rank_shares[static_cast<size_t>(r)] = sum / static_cast<double>(used);
  }
  const auto slowest = std::max_element(spread.rank_shares.begin(), spread.rank_shares.end());
  spread.slowest_rank = static_cast<int>(slowest - spread.rank_shares.begin());
  spread.slowest_share = *slowest;
  if (used < 2) return spread;  // one step: a rank's share and its noise cannot be told apart
  double squares = 0;
  for (const std::vector<double>& row : shares)
    for (int r = 0; r < nranks; ++r) {
      const double deviation = row[static_cast<size_t>(r)] - spread.rank_shares[static_cast<size_t>(r)];
      squares += deviation * deviation;
    }
  const double freedom = static_cast<double>(nranks - 1) * static_cast<double>(used - 1);
  spread.transient_cv = std::sqrt(squares / freedom);
  // A rank's share less the mean share (1) averages `used` deviations of variance cv^2 (n-1)/n.
  spread.standard_error = spread.transient_cv * std::sqrt((nranks - 1.0) / (nranks * static_cast<double>(used)));
  spread.persistent =
      spread.slowest_share - 1 > kStragglerErrors * spread.standard_error && spread.slowest_share >= kLeastStragglerShare;
  if (spread.persistent && used >= 2 * kStragglerBlocks)
    for (size_t block = 0; block < kStragglerBlocks; ++block) {
      const size_t first = used * block / kStragglerBlocks, last = used * (block + 1) / kStragglerBlocks;
      double sum = 0;
      for (size_t step = first; step < last; ++step) sum += shares[step][static_cast<size_t>(spread.slowest_rank)];
      if (sum / static_cast<double>(last - first) - 1 < (spread.slowest_share - 1) / 2) spread.persistent = false;
    }
  return spread;
}

BackwardProfile slowed_profile(BackwardProfile profile, double factor) {
  profile.forward_s *= factor;
  profile.backward_s *= factor;
  for (double& t : profile.ready_s) t *= factor;
  return profile;
}

StepPrediction expected_step(const SlowestRankFactors& slowest, const BackwardProfile& profile,
                             const std::function<StepPrediction(const BackwardProfile&)>& predict) {
  StepPrediction expected;
  expected.iteration_s = expected.exposed_s = expected.communication_s = expected.negotiation_s = expected.overlap = 0;
  for (const SlowestRankFactors::Bin& bin : slowest.bins) {
    StepPrediction p = predict(slowed_profile(profile, bin.factor));
    expected.iteration_s += bin.weight * p.iteration_s;
    expected.exposed_s += bin.weight * p.exposed_s;
    expected.communication_s += bin.weight * p.communication_s;
    expected.negotiation_s += bin.weight * p.negotiation_s;
    expected.overlap += bin.weight * p.overlap;
    if (bin.factor == slowest.median) {
      expected.negotiations = p.negotiations;
      expected.bucket_start_s = std::move(p.bucket_start_s);
      expected.bucket_end_s = std::move(p.bucket_end_s);
    }
  }
  return expected;
}

}  // namespace sb::sim
