// The op profiler (models/profiling_backend.hpp, sb-train --profile-ops) bills each op to its kind
// only while timing is on, tells convolutions apart by kernel and stride and batch norms by what
// they fuse, lists the kinds by time, and leaves the results to the backend it wraps.
#include "models/profiling_backend.hpp"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/reference_backend.hpp"

namespace sb::models {
namespace {

std::vector<float> ramp(int64_t count) {
  std::vector<float> v(static_cast<size_t>(count));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 7) - 3.0f;
  return v;
}

std::map<std::string, int64_t> calls_by_kind(const ProfilingBackend& backend) {
  std::map<std::string, int64_t> calls;
  for (const OpTime& t : backend.profile()) calls[t.op] = t.calls;
  return calls;
}

TEST(ProfilingBackend, BillsOpsToTheirKindsOnlyWhileTiming) {
  ProfilingBackend backend(std::make_unique<ReferenceBackend>());
  Tensor x = backend.allocate({2, 4, 6, 6}), w3 = backend.allocate({4, 4, 3, 3}), w1 = backend.allocate({4, 4, 1, 1});
  Tensor y = backend.allocate({2, 4, 6, 6}), half = backend.allocate({2, 4, 3, 3});
  backend.write(x, ramp(x.count()));
  backend.write(w3, ramp(w3.count()));
  backend.write(w1, ramp(w1.count()));

  backend.conv_forward(x, w3, y, {1, 1});  // timing off: forwarded, not billed
  EXPECT_TRUE(backend.profile().empty());

  backend.set_timing(true);
  backend.conv_forward(x, w3, y, {1, 1});
  backend.conv_forward(x, w3, y, {1, 1});
  backend.conv_forward(x, w1, half, {2, 0});
  backend.conv_backward_data(half, w1, x, {2, 0});
  backend.relu_forward(y, y);
  backend.set_timing(false);
  backend.relu_forward(y, y);

  const std::map<std::string, int64_t> expected = {{"conv 3x3 forward", 2},
                                                   {"conv 1x1 stride 2 forward", 1},
                                                   {"conv 1x1 stride 2 backward-data", 1},
                                                   {"relu forward", 1}};
  EXPECT_EQ(calls_by_kind(backend), expected);
  const std::vector<OpTime> profile = backend.profile();
  for (size_t i = 1; i < profile.size(); ++i) EXPECT_GE(profile[i - 1].seconds, profile[i].seconds) << "by time";
  for (const OpTime& t : profile) EXPECT_GT(t.seconds, 0.0) << t.op;
}

TEST(ProfilingBackend, NamesBatchNormsByWhatTheyFuse) {
  ProfilingBackend backend(std::make_unique<ReferenceBackend>());
  const Shape shape{2, 3, 4, 4}, channels{1, 3, 1, 1};
  Tensor x = backend.allocate(shape), y = backend.allocate(shape), residual = backend.allocate(shape);
  Tensor dx = backend.allocate(shape), dy = backend.allocate(shape);
  Tensor gamma = backend.allocate(channels), beta = backend.allocate(channels), mean = backend.allocate(channels);
  Tensor variance = backend.allocate(channels), dgamma = backend.allocate(channels), dbeta = backend.allocate(channels);
  backend.write(x, ramp(x.count()));
  backend.fill(gamma, 1.0f);
  backend.set_timing(true);
  backend.batchnorm_forward_training(x, gamma, beta, y, mean, variance, 1e-5f, false, nullptr);
  backend.batchnorm_forward_training(x, gamma, beta, y, mean, variance, 1e-5f, true, nullptr);
  backend.batchnorm_forward_training(x, gamma, beta, y, mean, variance, 1e-5f, true, &residual);
  backend.batchnorm_backward(x, dy, gamma, mean, variance, &y, dx, dgamma, dbeta, 1e-5f);
  backend.batchnorm_backward(x, dy, gamma, mean, variance, nullptr, dx, dgamma, dbeta, 1e-5f);
  const std::map<std::string, int64_t> expected = {{"batchnorm forward", 1},
                                                   {"batchnorm+relu forward", 1},
                                                   {"batchnorm+add+relu forward", 1},
                                                   {"batchnorm+relu backward", 1},
                                                   {"batchnorm backward", 1}};
  EXPECT_EQ(calls_by_kind(backend), expected);
}

TEST(ProfilingBackend, LeavesTheResultsToTheBackendItWraps) {
  ProfilingBackend profiled(std::make_unique<ReferenceBackend>());
  ReferenceBackend plain;
  auto run = [](Backend& b) {
    Tensor x = b.allocate({1, 2, 5, 5}), w = b.allocate({3, 2, 3, 3}), y = b.allocate({1, 3, 5, 5});
    b.write(x, ramp(x.count()));
    b.write(w, ramp(w.count()));
    b.conv_forward(x, w, y, {1, 1});
    return std::make_pair(read_all(b, y), b.sum_of_squares(y));
  };
  profiled.set_timing(true);
  EXPECT_EQ(run(profiled), run(plain));
  EXPECT_EQ(calls_by_kind(profiled).at("sums of squares"), 1) << "a value-returning op is billed too";
  EXPECT_FALSE(profiled.can_capture()) << "a capture cannot hold the waits after each op";
}

}  // namespace
}  // namespace sb::models
