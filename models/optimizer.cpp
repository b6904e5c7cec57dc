#include "models/optimizer.hpp"

#include <cmath>

#include "common/usage_error.hpp"
#include "models/optimizer_math.hpp"

namespace sb::models {

OptimizerKind parse_optimizer(const std::string& name) {
  if (name == "sgd") return OptimizerKind::sgd;
  if (name == "nesterov") return OptimizerKind::nesterov;
  if (name == "lars") return OptimizerKind::lars;
  throw UsageError("unknown optimizer '" + name + "' (sgd, nesterov, lars)");
}

std::string optimizer_name(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::sgd: return "sgd";
    case OptimizerKind::nesterov: return "nesterov";
    case OptimizerKind::lars: return "lars";
  }
  return "?";
}

Optimizer::Optimizer(Backend& backend, std::vector<Parameter*> parameters, const OptimizerConfig& config)
    : backend_(backend), parameters_(std::move(parameters)), config_(config) {
  int64_t weights = 0;
  for (Parameter* p : parameters_) {
    momentum_.push_back({p->name + ".momentum", backend.allocate(p->value.shape())});
    backend.keep_fp32_master(p->value);
    backend.keep_fp32_master(momentum_.back().value);
    weights += is_weight(p->kind);
  }
  if (config_.kind == OptimizerKind::lars && weights > 0) norms_ = backend.allocate({1, 2 * weights, 1, 1});
}

double Optimizer::lars_trust_ratio(double weight_norm, double grad_norm, double eta, double weight_decay) {
  return lars_trust(weight_norm * weight_norm, grad_norm * grad_norm, 1.0, eta, weight_decay);
}

float Optimizer::momentum_scale(double lr, double previous_lr) const {
  if (!config_.corrects_momentum() || !(previous_lr > 0)) return 1.0f;
  return static_cast<float>(lr / previous_lr);
}

void Optimizer::step(float lr, float grad_scale, const Tensor* rates, float momentum_scale) {
  const bool lars = config_.kind == OptimizerKind::lars;
  // LARS's squared norms of every weight and its gradient, left where the updates read them (on a
  // GPU: no wait, and a step that can be recorded).
  if (!norms_.empty()) {
    std::vector<const Tensor*> norm_of;
    for (const Parameter* p : parameters_)
      if (is_weight(p->kind)) norm_of.insert(norm_of.end(), {&p->value, &p->grad});
    backend_.sums_of_squares_into(norm_of, norms_);
  }
  int64_t next_norm = 0;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    Parameter& p = *parameters_[i];
    const bool weight = is_weight(p.kind);
    MomentumStep step;
    step.momentum = config_.momentum;
    step.nesterov = config_.kind == OptimizerKind::nesterov;
    step.weight_decay = weight || (config_.decay_bn_and_bias && !lars) ? config_.weight_decay : 0.0f;
    step.lr = lr;
    step.grad_scale = grad_scale;
    step.momentum_scale = momentum_scale;
    step.rates = rates;
    if (lars && weight) {
      step.trust_norms = &norms_;
      step.trust_index = next_norm;
      step.trust_eta = config_.lars_eta;
      next_norm += 2;
    }
    backend_.momentum_update(p.value, p.grad, momentum_[i].value, step);
  }
}

}  // namespace sb::models
