#pragma once
// Optimizers over a model's parameters: SGD with momentum (heavy-ball or Nesterov) and LARS as
// MLPerf's ResNet uses it. Both keep one momentum buffer per parameter, with the learning rate
// folded in (v = m v + lr g'), which is what lets LARS scale the rate per layer. With momentum
// correction (Goyal et al.) the buffer is rescaled by lr_t / lr_(t-1) at each step, so that it stays
// lr_t times PyTorch's (u = m u + g', w -= lr u) as the rate changes and the two take the same steps;
// without it, after a change of rate the buffer carries the old rate's steps for ~1 / (1 - m) steps.
#include <optional>
#include <string>
#include <vector>

#include "models/backend.hpp"
#include "models/parameter.hpp"

namespace sb::models {

enum class OptimizerKind { sgd, nesterov, lars };

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::sgd;
  float momentum = 0.9f;
  float weight_decay = 5e-5f;
  // Weight decay on batch-norm parameters and biases too (PyTorch's default); off = MLPerf's
  // exclusion. LARS always excludes them, from decay and from the trust ratio.
  bool decay_bn_and_bias = false;
  float lars_eta = 0.001f;  // LARS trust coefficient
  // Whether the caller passes the momentum correction to step() (momentum_scale below); it is the
  // caller that knows which rate the buffers were last updated at (a skipped fp16 step keeps it).
  // Unset: on for sgd and nesterov (PyTorch's steps), off for lars (MLPerf's reference LARS).
  std::optional<bool> momentum_correction = std::nullopt;
  bool corrects_momentum() const { return momentum_correction.value_or(kind != OptimizerKind::lars); }
};

// "sgd", "nesterov", "lars"; throws UsageError otherwise.
OptimizerKind parse_optimizer(const std::string& name);
std::string optimizer_name(OptimizerKind kind);

class Optimizer {
 public:
  Optimizer(Backend& backend, std::vector<Parameter*> parameters, const OptimizerConfig& config);
  // One step at learning rate lr from the gradients in each parameter's grad, each multiplied by
  // grad_scale first (1 / the loss scale under fp16), the momentum carried over multiplied by
  // momentum_scale. With `rates`, the three are read from that (1, step_rate::count, 1, 1) tensor
  // when the updates run instead (MomentumStep::rates: a recorded step).
  // LARS's trust ratios are computed where the updates run, from norms that never leave the device.
  void step(float lr, float grad_scale = 1.0f, const Tensor* rates = nullptr, float momentum_scale = 1.0f);
  // The momentum_scale of a step at rate lr whose buffers were last updated at previous_lr: 1
  // without momentum correction, or before any step (previous_lr 0, when the buffers are still 0).
  float momentum_scale(double lr, double previous_lr) const;
  // One momentum buffer per parameter, named "<parameter>.momentum", for checkpoints.
  std::vector<Buffer>& state() { return momentum_; }
  const OptimizerConfig& config() const { return config_; }
  // LARS's trust ratio for one tensor: eta |w| / (|g| + wd |w|), 1 where either norm is zero
  // (models/optimizer_math.hpp's lars_trust, which the updates use).
  static double lars_trust_ratio(double weight_norm, double grad_norm, double eta, double weight_decay);

 private:
  Backend& backend_;
  std::vector<Parameter*> parameters_;
  OptimizerConfig config_;
  std::vector<Buffer> momentum_;
  Tensor norms_;  // LARS: each weight's and its gradient's squared norm, two by two
};

}  // namespace sb::models
