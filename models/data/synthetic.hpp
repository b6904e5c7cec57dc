#pragma once
// Random images for throughput runs (no I/O, no decoding): pixels drawn from (index, position),
// label = index mod classes. ImageNet-sized by default: 1,281,167 training and 50,000 evaluation
// samples, 1000 classes, 3 x SIZE x SIZE.
#include "models/data/dataset.hpp"

namespace sb::models {

class SyntheticDataset final : public Dataset {
 public:
  SyntheticDataset(int64_t samples, int64_t classes, ImageShape shape, uint64_t salt)
      : samples_(samples), classes_(classes), shape_(shape), salt_(salt) {}
  std::string name() const override { return "synthetic"; }
  int64_t size() const override { return samples_; }
  int64_t num_classes() const override { return classes_; }
  ImageShape image_shape() const override { return shape_; }
  int32_t load(int64_t index, uint64_t augment_key, float* out) const override;
  uint64_t fingerprint() const override;
  bool resizable() const override { return true; }
  void set_image_size(int64_t pixels) override { shape_.height = shape_.width = pixels; }

 private:
  int64_t samples_, classes_;
  ImageShape shape_;
  uint64_t salt_;
};

DataSplits open_synthetic(int64_t image_size);

}  // namespace sb::models
