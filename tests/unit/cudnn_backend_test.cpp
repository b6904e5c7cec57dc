// The cuDNN backend's own tests: the precision and backend choices, fp16's dynamic loss scaling,
// and the device memory peak (the GPU ones skipped without a GPU). Its layers, updates and training
// steps against oneDNN at each precision are the Cudnn pairs of backend_conformance_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "common/usage_error.hpp"
#include "models/loss_scale.hpp"
#include "models/optimizer.hpp"
#include "models/resnet.hpp"
#include "tests/unit/gpu_skip.hpp"

#if SB_HAVE_CUDA
#include "models/cudnn_backend.hpp"
#endif

namespace sb::models {
namespace {

TEST(CudnnBackend, PrecisionAndBackendChoicesAreCheckedUpFront) {
  EXPECT_EQ(parse_precision("bf16"), Precision::bf16);
  EXPECT_EQ(precision_name(parse_precision("tf32")), "tf32");
  EXPECT_THROW(parse_precision("fp8"), UsageError);
  EXPECT_THROW(make_backend("onednn", {1, Precision::fp16}), UsageError);  // the CPU path is fp32 only
  EXPECT_THROW(make_backend("tpu"), UsageError);
#if !SB_HAVE_CUDA
  EXPECT_THROW(make_backend("cudnn"), UsageError);
#endif
}

TEST(CudnnBackend, HostBackendsHaveNoDeviceMemory) {
  EXPECT_EQ(make_backend("onednn", {1})->peak_device_bytes(), 0);
  EXPECT_EQ(make_backend("recording:onednn", {1})->peak_device_bytes(), 0) << "a wrapper asks what it wraps";
}

#if SB_HAVE_CUDA

// fp16 training with a loss scale far too large: dlogits x scale overflows fp16, the step is
// skipped (weights untouched) and the scale halved until the gradients fit; then steps apply, and
// after growth_interval clean steps the scale doubles again. Twice: decided on the host
// (gradients_finite), and on the device as a recorded step decides it (all_finite_into, the update
// reading the flag from its rates), which must give the same weights bit for bit.
TEST(CudnnLossScale, Fp16OverflowIsSkippedAndTheScaleRecovers) {
  SB_SKIP_WITHOUT_GPU();
  std::vector<std::vector<float>> final_weights;
  for (bool on_device : {false, true}) {
    SCOPED_TRACE(on_device ? "decided on the device" : "decided on the host");
    CudnnBackend gpu(CudnnOptions{Precision::fp16});
    ResNet model(gpu, make_resnet_config("resnet20", 3, 10, 16, 5));
    Optimizer optimizer(gpu, model.parameters(), OptimizerConfig{});
    DynamicLossScale scale(std::ldexp(1.0, 40), 2);
    std::vector<float> images(static_cast<size_t>(4 * 3 * 16 * 16));
    for (size_t i = 0; i < images.size(); ++i) images[i] = std::sin(static_cast<float>(i));
    Tensor input = gpu.allocate({4, 3, 16, 16}), dlogits = gpu.allocate({4, 10, 1, 1});
    Tensor rates = gpu.allocate({1, step_rate::count, 1, 1});
    gpu.write(input, images);
    const std::vector<int32_t> labels = {3, 1, 4, 1};
    std::vector<const Tensor*> gradients;
    for (const Parameter* p : model.parameters()) gradients.push_back(&p->grad);
    const Tensor& first_weight = model.parameters()[0]->value;
    int skipped = 0, applied = 0;
    for (int step = 0; step < 40 && applied < 3; ++step) {
      const std::vector<float> before = read_all(gpu, first_weight);
      softmax_cross_entropy_now(gpu, model.forward(input), labels, 0, dlogits);
      gpu.scale(dlogits, static_cast<float>(scale.scale()));
      model.backward(dlogits);
      const double used = scale.scale();
      bool finite = false;
      if (on_device) {
        gpu.write(rates, std::vector<float>{0.01f, static_cast<float>(1.0 / used), 1, 1});
        gpu.all_finite_into(gradients, rates, step_rate::apply);
        optimizer.step(0, 1, &rates);
        finite = read_all(gpu, rates)[step_rate::apply] != 0;
        EXPECT_EQ(finite, gradients_finite(gpu, model.parameters()));
        scale.update(finite);
      } else {
        finite = scale.update(gradients_finite(gpu, model.parameters()));
        if (finite) optimizer.step(0.01f, static_cast<float>(1.0 / used));
      }
      if (finite) {
        ++applied;
        EXPECT_NE(read_all(gpu, first_weight), before) << "an applied step moves the weights";
      } else {
        ++skipped;
        EXPECT_EQ(read_all(gpu, first_weight), before) << "a skipped step leaves them";
        EXPECT_EQ(scale.scale(), used / 2);
      }
    }
    EXPECT_GE(skipped, 10);  // 2^40 x O(0.1) is far beyond fp16's 65504
    EXPECT_EQ(applied, 3);
    EXPECT_EQ(scale.skipped_steps(), skipped);
    std::vector<float> all;
    for (const Parameter* p : model.parameters())
      for (float v : read_all(gpu, p->value)) {
        ASSERT_TRUE(std::isfinite(v)) << p->name;
        all.push_back(v);
      }
    final_weights.push_back(std::move(all));
  }
  EXPECT_EQ(final_weights[0], final_weights[1]);
}

// The peak is the device's memory in use: a 1 GiB tensor raises it by at least that, and it stays
// up after the tensor is freed; it never passes the device's total.
TEST(CudnnBackend, PeakDeviceMemoryCountsATensorAndStaysAfterItGoes) {
  SB_SKIP_WITHOUT_GPU();
  CudnnBackend gpu(CudnnOptions{Precision::fp32});
  gpu.synchronize();
  const int64_t before = gpu.peak_device_bytes();
  EXPECT_GT(before, 0) << "the CUDA context alone holds memory";
  constexpr int64_t kGiB = int64_t{1} << 30;
  {
    Tensor big = gpu.allocate({kGiB / 4, 1, 1, 1});
    EXPECT_GE(gpu.peak_device_bytes(), before + kGiB);
  }
  gpu.synchronize();
  EXPECT_GE(gpu.peak_device_bytes(), before + kGiB) << "a peak, not what is in use now";
  size_t free_bytes = 0, total_bytes = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  EXPECT_LE(gpu.peak_device_bytes(), static_cast<int64_t>(total_bytes));
}

#endif  // SB_HAVE_CUDA

}  // namespace
}  // namespace sb::models
