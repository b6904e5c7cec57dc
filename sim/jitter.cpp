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

SlowestRankFactors slowest_rank_factors(double cv, int nranks, int steps, uint64_t seed, double bin_width) {
  SlowestRankFactors factors;
  if (cv <= 0 || steps < 1 || nranks < 1) {
    factors.bins = {{1.0, 1.0}};
    return factors;
  }
  std::mt19937_64 engine(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  std::vector<double> slowest(static_cast<size_t>(steps));
  for (double& step : slowest) {
    step = 0;
    for (int r = 0; r < nranks; ++r) step = std::max(step, jitter_factor(cv, z(engine)));
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
