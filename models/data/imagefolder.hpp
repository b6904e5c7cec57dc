#pragma once
// An ImageNet-style folder of JPEGs: ROOT/train/<class>/<image> and ROOT/val/<class>/<image>,
// classes being the train/ folder names in sorted order (torchvision's ImageFolder). Training
// samples get random-resized-crop (scale 0.08-1, aspect 3/4-4/3) and a horizontal flip;
// evaluation samples a resize of the short side to size x 256/224 and a center crop. RGB,
// normalised by ImageNet's mean and standard deviation. A file that does not decode is skipped
// and counted by the loader, not fatal.
#include <string>
#include <vector>

#include "models/data/dataset.hpp"

namespace sb::models {

class IdxDataset;

class ImageFolderDataset final : public Dataset {
 public:
  // Throws UsageError for a missing folder, no classes, no images, or a val/ class unknown to train/.
  ImageFolderDataset(const std::string& folder, std::vector<std::string> classes, int64_t image_size, bool training);
  std::string name() const override { return "imagefolder"; }
  uint64_t fingerprint() const override { return fingerprint_; }
  int64_t size() const override { return static_cast<int64_t>(files_.size()); }
  int64_t num_classes() const override { return static_cast<int64_t>(classes_.size()); }
  ImageShape image_shape() const override { return {3, size_, size_}; }
  int32_t load(int64_t index, uint64_t augment_key, float* out) const override;
  bool resizable() const override { return true; }
  void set_image_size(int64_t pixels) override { size_ = pixels; }
  const std::vector<std::string>& classes() const { return classes_; }

 private:
  std::vector<std::string> classes_;
  std::vector<std::pair<std::string, int32_t>> files_;  // path, label
  uint64_t fingerprint_ = 0;  // of the classes' names and each file's "class/name", in order
  int64_t size_;
  bool training_;
};

// The class folder names under ROOT/train, sorted.
std::vector<std::string> image_folder_classes(const std::string& root);
DataSplits open_image_folder(const std::string& root, int64_t image_size);

// Writes an IDX data set's images as grayscale JPEGs, split_dir/<class>/<index>.jpg with
// zero-padded class names (so that their sorted order is the label order). limit > 0 writes the
// first `limit` samples only. Throws UsageError when a file cannot be written.
void write_image_folder(const IdxDataset& data, const std::string& split_dir, int64_t limit, int quality);

}  // namespace sb::models
