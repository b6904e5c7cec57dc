#pragma once
// Dynamic loss scaling for fp16 training: the loss (in practice its gradient, dlogits) is
// multiplied by a scale S before the backward pass so that small gradients stay above fp16's
// smallest normal value; the optimizer step divides by S again (in fp32, on the master weights).
// A step whose gradients overflowed (an inf or NaN anywhere) is skipped and S halved; after
// `growth_interval` clean steps in a row S doubles, so it settles just below overflow; never
// beyond `maximum` (2^24, as Apex caps it), where fp32 training, which rarely overflows, would
// otherwise double it out of a float's range.
#include <cstdint>
#include <vector>

#include "models/backend.hpp"
#include "models/parameter.hpp"

namespace sb::models {

class DynamicLossScale {
 public:
  static constexpr double kMaximum = 16777216.0;  // 2^24
  explicit DynamicLossScale(double initial = 65536.0, int64_t growth_interval = 2000, double minimum = 1.0,
                            double maximum = kMaximum);
  double scale() const { return scale_; }
  // After the gradients are complete: whether to apply this step (false when they overflowed,
  // and the scale is halved then, never below the minimum).
  bool update(bool gradients_finite);
  int64_t skipped_steps() const { return skipped_; }
  int64_t clean_steps() const { return clean_; }
  // A checkpoint's scale and clean-step count, so that a resumed run scales as the first would.
  void restore(double scale, int64_t clean_steps);

 private:
  double scale_;
  int64_t growth_interval_;
  double minimum_, maximum_;
  int64_t clean_ = 0, skipped_ = 0;
};

// Whether every parameter's gradient is finite, read back to the host: the reference for
// Backend::all_finite_into, with which the trainer decides on the device without waiting.
bool gradients_finite(Backend& backend, const std::vector<Parameter*>& parameters);

}  // namespace sb::models
