#include "models/data/imagefolder.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "common/atomic_file.hpp"
#include "common/usage_error.hpp"
#include "kernels/random.hpp"
#include "models/data/idx.hpp"
#include "models/data/jpeg.hpp"

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

// A crop window of the source image, in source pixels.
struct Crop {
  double x0, y0, width, height;
};

// torchvision's RandomResizedCrop: area fraction in [0.08, 1], aspect ratio log-uniform in
// [3/4, 4/3], ten tries, then the whole image's central crop at the nearest allowed ratio.
Crop random_resized_crop(int width, int height, uint64_t key) {
  const double area = static_cast<double>(width) * height;
  for (uint64_t attempt = 0; attempt < 10; ++attempt) {
    const double target = area * (0.08 + 0.92 * random_unit(key, 4 * attempt));
    const double log_ratio = std::log(3.0 / 4) + (std::log(4.0 / 3) - std::log(3.0 / 4)) * random_unit(key, 4 * attempt + 1);
    const double ratio = std::exp(log_ratio);
    const double w = std::sqrt(target * ratio), h = std::sqrt(target / ratio);
    if (w <= width && h <= height) {
      const double x0 = (width - w) * random_unit(key, 4 * attempt + 2);
      const double y0 = (height - h) * random_unit(key, 4 * attempt + 3);
      return {x0, y0, w, h};
    }
  }
  const double ratio = static_cast<double>(width) / height;
  double w = width, h = height;
  if (ratio < 3.0 / 4) h = w / (3.0 / 4);
  if (ratio > 4.0 / 3) w = h * (4.0 / 3);
  w = std::min<double>(w, width), h = std::min<double>(h, height);
  return {(width - w) / 2, (height - h) / 2, w, h};
}

// Resize of the short side to size * 256 / 224, then the central size x size: as a crop window.
Crop center_crop(int width, int height, int64_t size) {
  const double scale = static_cast<double>(std::min(width, height)) / (static_cast<double>(size) * 256 / 224);
  const double side = static_cast<double>(size) * scale;
  return {(width - side) / 2, (height - side) / 2, side, side};
}

// Bilinear sampling of the crop window into size x size, normalised, NCHW; mirrored when flip.
void resample(const RgbImage& image, const Crop& crop, int64_t size, bool flip, float* out) {
  const double sx = crop.width / static_cast<double>(size), sy = crop.height / static_cast<double>(size);
  const int64_t plane = size * size;
  for (int64_t y = 0; y < size; ++y) {
    const double fy = std::clamp(crop.y0 + (y + 0.5) * sy - 0.5, 0.0, image.height - 1.0);
    const int y0 = static_cast<int>(fy), y1 = std::min(y0 + 1, image.height - 1);
    const double wy = fy - y0;
    for (int64_t x = 0; x < size; ++x) {
      const int64_t ox = flip ? size - 1 - x : x;
      const double fx = std::clamp(crop.x0 + (x + 0.5) * sx - 0.5, 0.0, image.width - 1.0);
      const int x0 = static_cast<int>(fx), x1 = std::min(x0 + 1, image.width - 1);
      const double wx = fx - x0;
      for (int c = 0; c < 3; ++c) {
        auto at = [&](int yy, int xx) { return static_cast<double>(image.pixels[(static_cast<size_t>(yy) * image.width + xx) * 3 + c]); };
        const double v = (1 - wy) * ((1 - wx) * at(y0, x0) + wx * at(y0, x1)) + wy * ((1 - wx) * at(y1, x0) + wx * at(y1, x1));
        out[c * plane + y * size + ox] = (static_cast<float>(v / 255.0) - kMean[c]) / kStd[c];
      }
    }
  }
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
    for (std::string& p : paths) files_.emplace_back(std::move(p), label->second);
  }
  if (files_.empty()) throw UsageError("image folder '" + folder + "' holds no .jpg or .jpeg images");
}

int32_t ImageFolderDataset::load(int64_t index, uint64_t augment_key, float* out) const {
  const auto& [path, label] = files_[static_cast<size_t>(index)];
  RgbImage image;
  if (!decode_jpeg(read_file(path), image)) return -1;
  if (training_ && augment_key != 0) {
    const Crop crop = random_resized_crop(image.width, image.height, augment_key);
    const bool flip = random_unit(augment_key, 1000) < 0.5f;
    resample(image, crop, size_, flip, out);
  } else {
    resample(image, center_crop(image.width, image.height, size_), size_, false, out);
  }
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
