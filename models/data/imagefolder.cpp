#include "models/data/imagefolder.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>

#include "common/atomic_file.hpp"
#include "common/content_checksum.hpp"
#include "common/usage_error.hpp"
#include "kernels/random.hpp"
#include "models/data/idx.hpp"
#include "models/data/jpeg.hpp"
#include "models/data/resample.hpp"

namespace sb::models {
namespace {

namespace fs = std::filesystem;

constexpr float kMean[3] = {0.485f, 0.456f, 0.406f};
constexpr float kStd[3] = {0.229f, 0.224f, 0.225f};

bool is_jpeg_name(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg";
}

// The resampled levels (CHW, 0..255) to the network's input: ImageNet's mean and deviation per
// channel, as torchvision's ToTensor + Normalize.
void normalise(int64_t size, float* values) {
  const int64_t plane = size * size;
  for (int c = 0; c < 3; ++c)
    for (int64_t i = 0; i < plane; ++i) values[c * plane + i] = (values[c * plane + i] / 255.0f - kMean[c]) / kStd[c];
}

}  // namespace

std::vector<std::string> image_folder_classes(const std::string& root) {
  const fs::path train = fs::path(root) / "train";
  if (!fs::is_directory(train)) throw UsageError("image folder '" + root + "' has no train/ directory");
  std::vector<std::string> classes;
  for (const auto& entry : fs::directory_iterator(train))
    if (entry.is_directory()) classes.push_back(entry.path().filename().string());
  std::sort(classes.begin(), classes.end());
  if (classes.empty()) throw UsageError("image folder '" + train.string() + "' has no class folders");
  return classes;
}

ImageFolderDataset::ImageFolderDataset(const std::string& folder, std::vector<std::string> classes, int64_t image_size,
                                       bool training)
    : classes_(std::move(classes)), size_(image_size), training_(training) {
  if (!fs::is_directory(folder)) throw UsageError("image folder '" + folder + "' does not exist");
  std::map<std::string, int32_t> label_of;
  for (size_t i = 0; i < classes_.size(); ++i) label_of[classes_[i]] = static_cast<int32_t>(i);
  std::vector<std::string> class_dirs;
  std::string names;  // each file's "class/name", in order, for the fingerprint
  for (const auto& entry : fs::directory_iterator(folder))
    if (entry.is_directory()) class_dirs.push_back(entry.path().filename().string());
  std::sort(class_dirs.begin(), class_dirs.end());
  for (const std::string& name : class_dirs) {
    auto label = label_of.find(name);
    if (label == label_of.end())
      throw UsageError("class folder '" + name + "' in '" + folder + "' is not a class of the training set");
    std::vector<std::string> paths;
    for (const auto& entry : fs::directory_iterator(fs::path(folder) / name))
      if (entry.is_regular_file() && is_jpeg_name(entry.path())) paths.push_back(entry.path().string());
    std::sort(paths.begin(), paths.end());
    for (std::string& p : paths) {
      // Relative to the folder: another node's copy sits under another path.
      names += name + "/" + fs::path(p).filename().string() + "\n";
      files_.emplace_back(std::move(p), label->second);
    }
  }
  if (files_.empty()) throw UsageError("image folder '" + folder + "' holds no .jpg or .jpeg images");
  ContentChecksum sum;
  for (const std::string& name : classes_) sum.add_text("class " + std::to_string(label_of[name]), name);
  sum.add_text("files", names);
  fingerprint_ = sum.value();
}

int32_t ImageFolderDataset::load(int64_t index, uint64_t augment_key, float* out) const {
  const auto& [path, label] = files_[static_cast<size_t>(index)];
  RgbImage image;
  if (!decode_jpeg(read_file(path), image)) return -1;
  if (training_ && augment_key != 0) {
    const bool flip = random_unit(augment_key, 1000) < 0.5f;
    resample(image, random_resized_crop(image.width, image.height, augment_key), size_, flip, out);
  } else {
    resample(image, center_crop(image.width, image.height, size_), size_, false, out);
  }
  normalise(size_, out);
  return label;
}

DataSplits open_image_folder(const std::string& root, int64_t image_size) {
  std::vector<std::string> classes = image_folder_classes(root);
  DataSplits splits;
  splits.train = std::make_unique<ImageFolderDataset>((fs::path(root) / "train").string(), classes, image_size, true);
  splits.eval = std::make_unique<ImageFolderDataset>((fs::path(root) / "val").string(), classes, image_size, false);
  return splits;
}

void write_image_folder(const IdxDataset& data, const std::string& split_dir, int64_t limit, int quality) {
  const ImageShape shape = data.image_shape();
  const int64_t count = limit > 0 ? std::min(limit, data.size()) : data.size();
  const size_t digits = std::to_string(std::max<int64_t>(data.num_classes() - 1, 0)).size();
  for (int64_t i = 0; i < count; ++i) {
    std::string label = std::to_string(data.label(i));
    label.insert(0, digits - label.size(), '0');
    const fs::path dir = fs::path(split_dir) / label;
    fs::create_directories(dir);
    const std::vector<uint8_t> jpeg = encode_jpeg(data.image_bytes(i), static_cast<int>(shape.width),
                                                  static_cast<int>(shape.height), 1, quality);
    const fs::path file = dir / (std::to_string(i) + ".jpg");
    AtomicFile out(file.string());
    out.stream().write(reinterpret_cast<const char*>(jpeg.data()), static_cast<std::streamsize>(jpeg.size()));
    out.commit();
  }
}

}  // namespace sb::models
