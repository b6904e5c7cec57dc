#include "models/gradient_sample.hpp"

#include "models/layers.hpp"
#include "models/onednn_backend.hpp"
#include "models/resnet.hpp"

namespace sb::models {

GradientSample sample_gradients(const std::string& model_name, int64_t image_size, int64_t batch, uint64_t seed,
                                int threads) {
  OnednnBackend backend(threads);
  ResNet model(backend, make_resnet_config(model_name, 3, 1000, image_size, 1));
  const ResNetConfig& c = model.config();
  Tensor images = backend.allocate({batch, c.in_channels, image_size, image_size});
  const Init data{seed};
  backend.write(images, data.normal("images", images.count(), 1.0));
  std::vector<int32_t> labels(static_cast<size_t>(batch));
  const std::vector<float> draws = data.uniform("labels", batch, 1.0);
  for (int64_t n = 0; n < batch; ++n)
    labels[n] = static_cast<int32_t>((draws[n] * 0.5 + 0.5) * static_cast<double>(c.num_classes)) % static_cast<int32_t>(c.num_classes);
  const Tensor& logits = model.forward(images);
  Tensor dlogits;
  ensure_shape(backend, dlogits, logits.shape());
  softmax_cross_entropy_now(backend, logits, labels, 0.0f, dlogits);
  model.backward(dlogits);
  backend.synchronize();
  GradientSample sample;
  for (const Parameter* p : model.parameters()) {
    const size_t count = static_cast<size_t>(p->grad.count());
    const size_t at = sample.values.size();
    sample.values.resize(at + count);
    backend.read(p->grad, std::span<float>(sample.values.data() + at, count));
    sample.names.push_back(p->name);
    sample.counts.push_back(count);
    sample.rows.push_back(static_cast<size_t>(p->grad.shape().n));
  }
  return sample;
}

}  // namespace sb::models
