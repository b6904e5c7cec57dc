#include "models/backward_timing.hpp"

#include <algorithm>
#include <chrono>

#include "common/stats.hpp"

namespace sb::models {

BackwardProfile measure_backward(ResNet& model, int64_t batch, int64_t image_size, int steps) {
  using Clock = std::chrono::steady_clock;
  Backend& backend = model.backend();
  const ResNetConfig& c = model.config();
  Tensor images = backend.allocate({batch, c.in_channels, image_size, image_size});
  const Init noise{12345};
  backend.write(images, noise.normal("images", images.count(), 1.0));
  std::vector<int32_t> labels(static_cast<size_t>(batch));
  for (int64_t n = 0; n < batch; ++n) labels[n] = static_cast<int32_t>(n % c.num_classes);
  Tensor dlogits;

  const size_t count = model.parameters().size();
  std::vector<std::vector<double>> ready(count);
  std::vector<double> totals, forwards;
  Clock::time_point start;
  model.set_gradient_hook([&](size_t p) {
    backend.synchronize();
    ready[p].push_back(std::chrono::duration<double>(Clock::now() - start).count());
  });
  for (int s = 0; s <= steps; ++s) {
    backend.synchronize();
    const Clock::time_point forward_start = Clock::now();
    const Tensor& logits = model.forward(images);
    ensure_shape(backend, dlogits, logits.shape());
    softmax_cross_entropy_now(backend, logits, labels, 0.0f, dlogits);
    backend.synchronize();
    start = Clock::now();
    forwards.push_back(std::chrono::duration<double>(start - forward_start).count());
    model.backward(dlogits);
    backend.synchronize();
    totals.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    if (s == 0) {  // the warm-up step creates the primitives
      totals.clear();
      forwards.clear();
      for (auto& r : ready) r.clear();
    }
  }
  model.set_gradient_hook({});
  BackwardProfile profile;
  profile.backward_s = percentile(totals, 50);
  profile.forward_s = percentile(forwards, 50);
  for (size_t p = 0; p < count; ++p) {
    const Parameter& param = *model.parameters()[p];
    profile.tensors.push_back({param.name, static_cast<size_t>(param.value.count())});
    profile.ready_s.push_back(std::min(percentile(ready[p], 50), profile.backward_s));
  }
  return profile;
}

}  // namespace sb::models
