#include "models/loss_scale.hpp"

#include <algorithm>
#include <cmath>

#include "common/check.hpp"

namespace sb::models {

DynamicLossScale::DynamicLossScale(double initial, int64_t growth_interval, double minimum, double maximum)
    : scale_(initial), growth_interval_(growth_interval), minimum_(minimum), maximum_(maximum) {
  SB_CHECK(initial >= minimum && initial <= maximum && minimum > 0 && growth_interval > 0, "loss scale settings");
}

bool DynamicLossScale::update(bool gradients_finite) {
  if (!gradients_finite) {
    scale_ = std::max(minimum_, scale_ / 2);
    clean_ = 0;
    ++skipped_;
    return false;
  }
  if (++clean_ == growth_interval_) {
    scale_ = std::min(maximum_, scale_ * 2);
    clean_ = 0;
  }
  return true;
}

void DynamicLossScale::restore(double scale, int64_t clean_steps) {
  SB_CHECK(scale > 0 && clean_steps >= 0 && clean_steps < growth_interval_, "restored loss scale");
  scale_ = std::clamp(scale, minimum_, maximum_);  // a checkpoint of a run with other bounds
  clean_ = clean_steps;
}

// A sum of squares is finite only if every element is (an inf or NaN anywhere propagates).
bool gradients_finite(Backend& backend, const std::vector<Parameter*>& parameters) {
  std::vector<const Tensor*> gradients;
  for (const Parameter* p : parameters) gradients.push_back(&p->grad);
  const std::vector<double> sums = backend.sums_of_squares(gradients);
  return std::all_of(sums.begin(), sums.end(), [](double sum) { return std::isfinite(sum); });
}

}  // namespace sb::models
