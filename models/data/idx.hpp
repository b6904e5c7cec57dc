#pragma once
// IDX files (LeCun's MNIST format, as Fashion-MNIST ships them), gzip-compressed or plain: a
// big-endian header (magic 0x0000080D, D = number of dimensions; type 0x08 = unsigned bytes),
// then the dimensions, then the bytes.
#include <cstdint>
#include <string>
#include <vector>

#include "models/data/dataset.hpp"

namespace sb::models {

struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> bytes;
};

// Throws UsageError naming the file for a missing, truncated or malformed file.
IdxArray read_idx(const std::string& path);
// Writes one as gzip (the tests' truncated and corrupt files are made from real ones).
void write_idx(const std::string& path, const IdxArray& array);

// Images (N, H, W) and labels (N) from two IDX files; pixels normalised by the data set's mean and
// standard deviation. Training augmentation: none (Fashion-MNIST trains to 90% without it).
class IdxDataset final : public Dataset {
 public:
  IdxDataset(const std::string& images_path, const std::string& labels_path, std::string name);
  std::string name() const override { return name_; }
  int64_t size() const override { return static_cast<int64_t>(labels_.size()); }
  int64_t num_classes() const override { return num_classes_; }
  ImageShape image_shape() const override { return {1, height_, width_}; }
  int32_t load(int64_t index, uint64_t augment_key, float* out) const override;
  uint64_t fingerprint() const override;
  // The raw bytes of one image (for the IdxFolder writer).
  const uint8_t* image_bytes(int64_t index) const { return images_.data() + index * height_ * width_; }
  int32_t label(int64_t index) const { return labels_[index]; }
  // Normalise by another split's statistics (the evaluation split by the training split's).
  void normalise_like(const IdxDataset& other) { mean_ = other.mean_, inv_std_ = other.inv_std_; }

 private:
  std::string name_;
  int64_t height_ = 0, width_ = 0, num_classes_ = 0;
  std::vector<uint8_t> images_;
  std::vector<int32_t> labels_;
  float mean_ = 0, inv_std_ = 1;
};

// The train and t10k splits in a directory holding the four standard file names (.gz or not).
DataSplits open_idx_directory(const std::string& directory);

}  // namespace sb::models
