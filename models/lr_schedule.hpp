#pragma once
// Learning rate per step: linear warm-up from peak/warmup to the peak, then cosine, polynomial
// (power 2, as MLPerf's LARS runs) or step decay to the end of training. The peak follows the
// linear scaling rule: base rate per 256 images x global batch / 256 (Goyal et al.).
#include <cstdint>
#include <string>
#include <vector>

namespace sb::models {

enum class DecayKind { cosine, poly, step };

DecayKind parse_decay(const std::string& name);  // throws UsageError

struct LrSchedule {
  static constexpr double kPolyPower = 2;  // poly: (1 - progress)^2 from the peak to end_lr
  double peak = 0.1;
  int64_t warmup_steps = 0;
  int64_t total_steps = 1;
  DecayKind decay = DecayKind::cosine;
  double end_lr = 0.0;                        // poly: the rate at the last step
  std::vector<double> step_fractions = {1.0 / 3, 2.0 / 3, 8.0 / 9};  // step: epochs 30, 60, 80 of 90
  double step_factor = 0.1;

  static double scaled_peak(double base_lr_per_256, int64_t global_batch) { return base_lr_per_256 * global_batch / 256.0; }
  double at(int64_t step) const;
};

}  // namespace sb::models
