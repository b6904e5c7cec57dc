#include "models/optimizer.hpp"

#include <cmath>

#include "common/check.hpp"
#include "common/usage_error.hpp"

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
  for (Parameter* p : parameters_) {
    momentum_.push_back({p->name + ".momentum", backend.allocate(p->value.shape())});
    backend.keep_fp32_master(p->value);
    backend.keep_fp32_master(momentum_.back().value);
  }
}

double Optimizer::lars_trust_ratio(double weight_norm, double grad_norm, double eta, double weight_decay) {
  if (weight_norm <= 0 || grad_norm <= 0) return 1.0;
  return eta * weight_norm / (grad_norm + weight_decay * weight_norm);
}

void Optimizer::step(float lr, float grad_scale, const Tensor* rates) {
  const bool lars = config_.kind == OptimizerKind::lars;
  SB_CHECK(!(lars && rates), "LARS's step cannot take its rates from a tensor");
  // LARS's norms, of every weight and its gradient, all at once (one wait on a GPU).
  std::vector<const Tensor*> norm_of;
  if (lars)
    for (const Parameter* p : parameters_)
      if (is_weight(p->kind)) norm_of.insert(norm_of.end(), {&p->value, &p->grad});
  const std::vector<double> squares = lars ? backend_.sums_of_squares(norm_of) : std::vector<double>();
  size_t next_norm = 0;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    Parameter& p = *parameters_[i];
    const bool weight = is_weight(p.kind);
    MomentumStep step;
    step.momentum = config_.momentum;
    step.nesterov = config_.kind == OptimizerKind::nesterov;
    step.weight_decay = weight || (config_.decay_bn_and_bias && !lars) ? config_.weight_decay : 0.0f;
    step.lr = lr;
    step.grad_scale = grad_scale;
    step.rates = rates;
    if (lars && weight) {
      const double weight_norm = std::sqrt(squares[next_norm]), grad_norm = std::sqrt(squares[next_norm + 1]);
      next_norm += 2;
      const double trust = lars_trust_ratio(weight_norm, grad_scale * grad_norm, config_.lars_eta, config_.weight_decay);
      step.lr = static_cast<float>(lr * trust);
    }
    backend_.momentum_update(p.value, p.grad, momentum_[i].value, step);
  }
}

}  // namespace sb::models
