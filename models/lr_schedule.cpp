#include "models/lr_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "common/usage_error.hpp"

namespace sb::models {

DecayKind parse_decay(const std::string& name) {
  if (name == "cosine") return DecayKind::cosine;
  if (name == "poly") return DecayKind::poly;
  if (name == "step") return DecayKind::step;
  throw UsageError("unknown learning-rate decay '" + name + "' (cosine, poly, step)");
}

double LrSchedule::at(int64_t step) const {
  if (step < warmup_steps) return peak * static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
  const int64_t decay_steps = std::max<int64_t>(total_steps - warmup_steps, 1);
  const double t = std::clamp(static_cast<double>(step - warmup_steps) / static_cast<double>(decay_steps), 0.0, 1.0);
  switch (decay) {
    case DecayKind::cosine: return peak * 0.5 * (1 + std::cos(std::numbers::pi * t));
    case DecayKind::poly:
      static_assert(kPolyPower == 2, "the polynomial decay squares");
      return end_lr + (peak - end_lr) * (1 - t) * (1 - t);
    case DecayKind::step: {
      const double progress = static_cast<double>(step) / static_cast<double>(std::max<int64_t>(total_steps, 1));
      double lr = peak;
      for (double fraction : step_fractions)
        if (progress >= fraction) lr *= step_factor;
      return lr;
    }
  }
  return peak;
}

}  // namespace sb::models
