#include "models/data/synthetic.hpp"

#include "common/content_checksum.hpp"
#include "kernels/random.hpp"

namespace sb::models {

int32_t SyntheticDataset::load(int64_t index, uint64_t, float* out) const {
  const uint64_t key = random_key(salt_, static_cast<uint64_t>(index), 0);
  for (int64_t i = 0; i < shape_.pixels(); ++i) out[i] = 2.0f * random_unit(key, static_cast<uint64_t>(i)) - 1.0f;
  return static_cast<int32_t>(index % classes_);
}

uint64_t SyntheticDataset::fingerprint() const {
  ContentChecksum sum;
  sum.add_int("samples", samples_);
  sum.add_int("classes", classes_);
  sum.add_int("channels", shape_.channels);
  sum.add_int("salt", static_cast<int64_t>(salt_));
  return sum.value();
}

DataSplits open_synthetic(int64_t image_size) {
  const ImageShape shape{3, image_size, image_size};
  DataSplits splits;
  splits.train = std::make_unique<SyntheticDataset>(1281167, 1000, shape, 1);
  splits.eval = std::make_unique<SyntheticDataset>(50000, 1000, shape, 2);
  return splits;
}

}  // namespace sb::models
