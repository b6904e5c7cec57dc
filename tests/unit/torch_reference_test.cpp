// The backends' ResNets against PyTorch's: two training steps of torchvision's ResNet-50
// (SGD with momentum, and Nesterov) and ResNet-18 (SGD, and Nesterov with the rate cut tenfold
// after step 1), from the same starting values, on the same batch,
// compared with what PyTorch computed (tests/unit/torch_reference_values.inc, written by
// tests/reference/torch-resnet-steps; PyTorch is needed to write it again, not to run this), on
// the oneDNN backend and, where a GPU is, on the cuDNN one at fp32.
// The other model tests check the backend against our own reference backend and finite
// differences; those share our reading of the conventions. This one checks the conventions
// themselves against the framework whose names and defaults we claim: v1.5's stride on the 3x3,
// BN's momentum and unbiased running variance, label smoothing, momentum and Nesterov, weight
// decay on weights only, inference on the running statistics, and PyTorch's SGD steps as the rate
// changes (momentum correction).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/random.hpp"
#include "models/backend.hpp"
#include "models/optimizer.hpp"
#include "models/resnet.hpp"
#include "tests/unit/gpu_skip.hpp"

namespace sb::models {
namespace {

struct ReferenceCase {
  const char* name;
  const char* model;
  int image_size;
  int batch;
  bool nesterov;
  double step2_rate_factor;  // step 2's learning rate as a multiple of step 1's
};
struct ReferenceValue {
  const char* case_name;
  const char* kind;  // loss, grad_norm, update_norm, buffer_sum, buffer_norm, eval_logit
  const char* tensor;
  int index;
  double value;
};
#include "tests/unit/torch_reference_values.inc"

// The generator's formula: float32(offset + amplitude x (h / 32768 - 1)), h the top 16 bits of
// SplitMix64's output (mix64) for 2^32 j + i.
std::vector<float> hashed(size_t count, uint64_t j, double amplitude, double offset = 0) {
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) {
    const uint64_t h = mix64(i + (j << 32)) >> 48;
    values[i] = static_cast<float>(offset + amplitude * (static_cast<double>(h) / 32768.0 - 1.0));
  }
  return values;
}

double norm(const std::vector<float>& values) {
  double sum = 0;
  for (float v : values) sum += static_cast<double>(v) * v;
  return std::sqrt(sum);
}

// What our run gives for each (kind, tensor, index) the reference has.
using Results = std::map<std::string, double>;
std::string key(const std::string& kind, const std::string& tensor, int index) {
  return kind + " " + tensor + " " + std::to_string(index);
}

bool ends_with(const std::string& text, const std::string& end) {
  return text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
}

Results run_case(Backend& backend, const ReferenceCase& c) {
  ResNet model(backend, make_resnet_config(c.model, 3, kReferenceClasses, c.image_size, 1));
  // Each residual block's last BN gamma starts near 0 (the generator says why).
  const std::string model_name = c.model;
  const bool bottleneck = model_name == "resnet50" || model_name == "resnet101" || model_name == "resnet152";
  const std::string last_bn = bottleneck ? "bn3.weight" : "bn2.weight";
  std::vector<std::vector<float>> start;
  uint64_t j = 0;
  for (Parameter* p : model.parameters()) {
    const size_t count = static_cast<size_t>(p->value.count());
    switch (p->kind) {
      case ParamKind::weight: {
        const double fan_in = static_cast<double>(count / static_cast<size_t>(p->value.shape().n));
        start.push_back(hashed(count, j, std::sqrt(2.0 / fan_in)));
        break;
      }
      case ParamKind::bn_gamma: {
        const bool last = p->name.starts_with("layer") && ends_with(p->name, last_bn);
        start.push_back(hashed(count, j, 0.2, last ? 0.0 : 1.0));
        break;
      }
      case ParamKind::bias:
      case ParamKind::bn_beta: start.push_back(hashed(count, j, 0.1)); break;
    }
    backend.write(p->value, start.back());
    ++j;
  }
  OptimizerConfig config;
  config.kind = c.nesterov ? OptimizerKind::nesterov : OptimizerKind::sgd;
  config.momentum = static_cast<float>(kReferenceMomentum);
  config.weight_decay = static_cast<float>(kReferenceWeightDecay);
  Optimizer optimizer(backend, model.parameters(), config);

  Tensor images = backend.allocate({c.batch, 3, c.image_size, c.image_size});
  backend.write(images, hashed(static_cast<size_t>(images.count()), 9999, 1.0));
  std::vector<int32_t> labels;
  for (int n = 0; n < c.batch; ++n) labels.push_back((7 * n + 3) % kReferenceClasses);
  Tensor dlogits = backend.allocate({c.batch, kReferenceClasses, 1, 1});

  Results got;
  double previous_lr = 0;
  for (int step = 1; step <= kReferenceSteps; ++step) {
    const Tensor& logits = model.forward(images);
    got[key("loss", "step" + std::to_string(step), step)] =
        softmax_cross_entropy_now(backend, logits, labels, static_cast<float>(kReferenceSmoothing), dlogits);
    model.backward(dlogits);
    if (step == 1)
      for (const Parameter* p : model.parameters()) got[key("grad_norm", p->name, 0)] = norm(read_all(backend, p->grad));
    const double lr = step == 1 ? kReferenceLr : kReferenceLr * c.step2_rate_factor;
    optimizer.step(static_cast<float>(lr), 1, nullptr, optimizer.momentum_scale(lr, previous_lr));
    previous_lr = lr;
  }
  for (size_t i = 0; i < model.parameters().size(); ++i) {
    const Parameter* p = model.parameters()[i];
    std::vector<float> moved = read_all(backend, p->value);
    for (size_t k = 0; k < moved.size(); ++k) moved[k] -= start[i][k];
    got[key("update_norm", p->name, 0)] = norm(moved);
  }
  for (const Buffer* b : model.buffers()) {
    const std::vector<float> values = read_all(backend, b->value);
    double sum = 0;
    for (float v : values) sum += v;
    got[key("buffer_sum", b->name, 0)] = sum;
    got[key("buffer_norm", b->name, 0)] = norm(values);
  }
  const std::vector<float> logits = read_all(backend, model.infer(images));
  for (size_t k = 0; k < logits.size(); ++k) got[key("eval_logit", "logits", static_cast<int>(k))] = logits[k];
  return got;
}

// The worst relative difference of each kind in a case, |ours - torch| / max(|torch|, floor); the
// floor (a share of the kind's largest value) keeps a near-zero sum or logit from dividing by ~0.
struct Worst {
  double error = 0;
  std::string where;
};

// Runs every case on the backend that make_backend() gives and compares it with the reference.
void expect_cases_match(const char* label, const std::function<std::unique_ptr<Backend>()>& make) {
  // The reference is PyTorch's fp64 run: ours is an fp32 run, which can come only as close as
  // fp32 lets it. PyTorch's own fp32 run comes within (the .inc's comments) loss 4e-7, gradient
  // norms 4e-4, update norms 1.6e-3, BN statistics 2e-6, eval logits 7e-5 (1.3e-4 in the decayed
  // case); these are ~4x that (~2x for the decayed case's logits).
  // A convention changed moves its kind by far more (each tried once by changing it here): BN's
  // biased running variance 8e-4 of the buffer norms, weight decay on BN parameters 6e2 of their
  // update norms, heavy ball for Nesterov 0.37, no label smoothing 2.8e-3 to 3.4e-2 of the loss,
  // no momentum correction 0.34 of the decayed case's update norms.
  const std::map<std::string, double> tolerance = {{"loss", 2e-6},        {"grad_norm", 2e-3},
                                                   {"update_norm", 6e-3}, {"buffer_sum", 1e-5},
                                                   {"buffer_norm", 1e-5}, {"eval_logit", 3e-4}};
  for (const ReferenceCase& c : kReferenceCases) {
    const std::unique_ptr<Backend> backend = make();
    const Results got = run_case(*backend, c);
    std::map<std::string, double> largest;
    for (const ReferenceValue& r : kReferenceValues)
      if (std::string(r.case_name) == c.name) largest[r.kind] = std::max(largest[r.kind], std::abs(r.value));
    std::map<std::string, Worst> worst;
    size_t compared = 0;
    for (const ReferenceValue& r : kReferenceValues) {
      if (std::string(r.case_name) != c.name) continue;
      const auto found = got.find(key(r.kind, r.tensor, r.index));
      ASSERT_NE(found, got.end()) << c.name << ": we have no " << key(r.kind, r.tensor, r.index);
      const double error =
          std::abs(found->second - r.value) / std::max(std::abs(r.value), 1e-3 * largest[r.kind]);
      Worst& w = worst[r.kind];
      if (error >= w.error) w = {error, std::string(r.tensor) + "[" + std::to_string(r.index) + "] ours " +
                                            std::to_string(found->second) + " torch " + std::to_string(r.value)};
      ++compared;
    }
    EXPECT_EQ(compared, got.size()) << c.name << ": we computed values the reference does not have";
    for (const auto& [kind, w] : worst) {
      EXPECT_LT(w.error, tolerance.at(kind)) << label << " " << c.name << " " << kind << ": worst " << w.where;
      std::printf("[ torch    ] %-6s %-18s %-12s worst relative difference %.2e (%s)\n", label, c.name, kind.c_str(), w.error,
                  w.where.c_str());
    }
  }
}

TEST(TorchReference, TwoTrainingStepsMatchPyTorchs) {
  expect_cases_match("onednn", [] { return make_backend("onednn"); });
}

// The cuDNN backend at fp32 (FMA only, no TF32) against the same values, where a GPU is.
TEST(TorchReference, TwoTrainingStepsOnCudnnMatchPyTorchs) {
  SB_SKIP_WITHOUT_GPU();
  expect_cases_match("cudnn", [] { return make_backend("cudnn", {0, Precision::fp32}); });
}

}  // namespace
}  // namespace sb::models
