// Synchronised batch norm (--bn-span) against one batch norm over the whole batch: two halves of a
// batch, each a BatchNorm2d on its own thread and backend, summing through a two-party BnSync,
// give the whole batch's outputs, input gradients and (summed) weight gradients. On the reference
// backend to 1e-5 (the group statistics are kept in fp32) and on oneDNN to 1e-4, relative to each
// tensor's largest value.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "models/layers.hpp"

namespace sb::models {
namespace {

// Two threads' vectors summed: each waits for the other's, then both get the sum.
class TwoPartySum {
 public:
  void sum(std::vector<double>& values) {
    std::unique_lock lock(mutex_);
    const int generation = generation_;
    if (arrived_ == 0) partial_.assign(values.size(), 0.0);
    for (size_t i = 0; i < values.size(); ++i) partial_[i] += values[i];
    if (++arrived_ == 2) {
      arrived_ = 0;
      result_ = partial_;
      ++generation_;
      changed_.notify_all();
    } else {
      changed_.wait(lock, [&] { return generation_ != generation; });
    }
    values = result_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<double> partial_, result_;
  int arrived_ = 0, generation_ = 0;
};

std::vector<float> random_values(size_t n, unsigned seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = 2.0f + dist(random);  // a mean away from 0, as activations have
  return v;
}

std::vector<float> host(Backend& backend, const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.count()));
  backend.read(t, v);
  return v;
}

double worst_relative(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 1e-30;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  }
  return diff / scale;
}

struct Outputs {
  std::vector<float> y, dx, dgamma, dbeta;
};

// One BatchNorm2d over images [first, first + count) of x and dy.
Outputs run_bn(const std::string& backend_name, const std::vector<float>& x, const std::vector<float>& dy, Shape whole,
               int64_t first, int64_t count, bool relu, const BnSync* sync) {
  auto backend = make_backend(backend_name, {1});
  const Shape part{count, whole.c, whole.h, whole.w};
  const size_t image = static_cast<size_t>(whole.c * whole.h * whole.w);
  Tensor xt = backend->allocate(part), dyt = backend->allocate(part);
  backend->write(xt, std::span<const float>(x.data() + first * image, count * image));
  backend->write(dyt, std::span<const float>(dy.data() + first * image, count * image));
  BatchNorm2d bn(*backend, "bn", whole.c, relu, false, sync);
  std::vector<float> gamma(static_cast<size_t>(whole.c)), beta(gamma.size());
  for (size_t c = 0; c < gamma.size(); ++c) gamma[c] = 0.5f + 0.25f * static_cast<float>(c), beta[c] = 0.1f * static_cast<float>(c);
  backend->write(bn.gamma().value, gamma);
  backend->write(bn.beta().value, beta);
  Outputs out;
  out.y = host(*backend, bn.forward(*backend, xt));
  TensorPool pool(*backend);
  out.dx = host(*backend, bn.backward(*backend, dyt, pool));
  out.dgamma = host(*backend, bn.gamma().grad);
  out.dbeta = host(*backend, bn.beta().grad);
  return out;
}

void expect_halves_match_whole(const std::string& backend_name, bool relu, double tolerance) {
  const Shape whole{6, 3, 5, 5};
  const size_t n = static_cast<size_t>(whole.n * whole.c * whole.h * whole.w);
  const std::vector<float> x = random_values(n, 1), dy = random_values(n, 2);
  const Outputs reference = run_bn(backend_name, x, dy, whole, 0, whole.n, relu, nullptr);
  TwoPartySum summer;
  BnSync sync{[&](std::vector<double>& v) { summer.sum(v); }};
  Outputs first, second;  // 2 and 4 images: unequal halves, as --balance may give
  std::thread other([&] { second = run_bn(backend_name, x, dy, whole, 2, 4, relu, &sync); });
  first = run_bn(backend_name, x, dy, whole, 0, 2, relu, &sync);
  other.join();
  std::vector<float> y = first.y, dx = first.dx, dgamma(first.dgamma.size()), dbeta(first.dbeta.size());
  y.insert(y.end(), second.y.begin(), second.y.end());
  dx.insert(dx.end(), second.dx.begin(), second.dx.end());
  for (size_t c = 0; c < dgamma.size(); ++c) dgamma[c] = first.dgamma[c] + second.dgamma[c], dbeta[c] = first.dbeta[c] + second.dbeta[c];
  const std::string what = backend_name + (relu ? " with ReLU" : "");
  EXPECT_LT(worst_relative(y, reference.y), tolerance) << what;
  EXPECT_LT(worst_relative(dx, reference.dx), tolerance) << what;
  EXPECT_LT(worst_relative(dgamma, reference.dgamma), tolerance) << what;
  EXPECT_LT(worst_relative(dbeta, reference.dbeta), tolerance) << what;
  // The halves alone (local BN) are far from the whole: the test can tell.
  const Outputs local = run_bn(backend_name, x, dy, whole, 0, 2, relu, nullptr);
  EXPECT_GT(worst_relative(local.dx, std::vector<float>(reference.dx.begin(), reference.dx.begin() + local.dx.size())),
            100 * tolerance)
      << what;
}

TEST(SyncBatchNorm, HalvesOfABatchGiveTheWholeBatchsBatchNorm) {
  for (bool relu : {false, true}) {
    expect_halves_match_whole("reference", relu, 1e-5);  // the statistics pass through fp32
    expect_halves_match_whole("onednn", relu, 1e-4);
  }
}

}  // namespace
}  // namespace sb::models
