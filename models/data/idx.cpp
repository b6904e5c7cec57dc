#include "models/data/idx.hpp"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>

#include "common/content_checksum.hpp"
#include "common/usage_error.hpp"

namespace sb::models {
namespace {

using GzFile = std::unique_ptr<gzFile_s, decltype(&gzclose)>;

GzFile open_gz(const std::string& path, const char* mode) {
  GzFile file(gzopen(path.c_str(), mode), &gzclose);
  if (!file) throw UsageError("cannot open IDX file '" + path + "'");
  return file;
}

// Reads exactly `bytes` or throws: a short read is a truncated file; a gzip error a corrupt one.
void read_exact(gzFile file, const std::string& path, void* out, size_t bytes) {
  auto* p = static_cast<unsigned char*>(out);
  while (bytes > 0) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(bytes, 1u << 30));
    const int got = gzread(file, p, chunk);
    if (got < 0) {
      int code = 0;
      throw UsageError("IDX file '" + path + "' is not readable gzip: " + gzerror(file, &code));
    }
    if (got == 0) throw UsageError("IDX file '" + path + "' is truncated");
    p += got;
    bytes -= static_cast<size_t>(got);
  }
}

uint32_t big_endian(const unsigned char* b) {
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
}

std::string existing(const std::string& directory, const std::string& stem) {
  for (const char* suffix : {".gz", ""}) {
    const std::string path = directory + "/" + stem + suffix;
    if (std::filesystem::exists(path)) return path;
  }
  throw UsageError("no IDX file '" + stem + "[.gz]' in '" + directory + "'");
}

}  // namespace

IdxArray read_idx(const std::string& path) {
  GzFile file = open_gz(path, "rb");
  unsigned char magic[4];
  read_exact(file.get(), path, magic, 4);
  if (magic[0] != 0 || magic[1] != 0 || magic[2] != 0x08 || magic[3] == 0 || magic[3] > 4)
    throw UsageError("'" + path + "' is not an IDX file of unsigned bytes (bad magic number)");
  IdxArray array;
  size_t total = 1;
  for (int d = 0; d < magic[3]; ++d) {
    unsigned char b[4];
    read_exact(file.get(), path, b, 4);
    const uint32_t extent = big_endian(b);
    if (extent == 0 || extent > (1u << 28)) throw UsageError("IDX file '" + path + "' has a bad dimension");
    array.dims.push_back(extent);
    total *= extent;
  }
  if (total > (size_t{1} << 34)) throw UsageError("IDX file '" + path + "' is implausibly large");
  array.bytes.resize(total);
  read_exact(file.get(), path, array.bytes.data(), total);
  return array;
}

void write_idx(const std::string& path, const IdxArray& array) {
  GzFile file = open_gz(path, "wb");
  unsigned char header[4] = {0, 0, 0x08, static_cast<unsigned char>(array.dims.size())};
  gzwrite(file.get(), header, 4);
  for (int64_t d : array.dims) {
    const unsigned char b[4] = {static_cast<unsigned char>(d >> 24), static_cast<unsigned char>(d >> 16),
                                static_cast<unsigned char>(d >> 8), static_cast<unsigned char>(d)};
    gzwrite(file.get(), b, 4);
  }
  if (!array.bytes.empty() && gzwrite(file.get(), array.bytes.data(), static_cast<unsigned>(array.bytes.size())) <= 0)
    throw UsageError("cannot write IDX file '" + path + "'");
}

IdxDataset::IdxDataset(const std::string& images_path, const std::string& labels_path, std::string name)
    : name_(std::move(name)) {
  IdxArray images = read_idx(images_path);
  IdxArray labels = read_idx(labels_path);
  if (images.dims.size() != 3) throw UsageError("'" + images_path + "' is not an IDX image file (N x H x W)");
  if (labels.dims.size() != 1) throw UsageError("'" + labels_path + "' is not an IDX label file (N)");
  if (images.dims[0] != labels.dims[0])
    throw UsageError("'" + images_path + "' and '" + labels_path + "' hold different numbers of samples");
  height_ = images.dims[1];
  width_ = images.dims[2];
  images_ = std::move(images.bytes);
  labels_.assign(labels.bytes.begin(), labels.bytes.end());
  num_classes_ = 1 + *std::max_element(labels_.begin(), labels_.end());
  // Normalise by this split's own pixel statistics (normalise_like() replaces them).
  double sum = 0, sum_sq = 0;
  for (uint8_t v : images_) sum += v, sum_sq += static_cast<double>(v) * v;
  const double n = static_cast<double>(images_.size());
  const double mean = sum / n, variance = std::max(sum_sq / n - mean * mean, 1e-6);
  mean_ = static_cast<float>(mean);
  inv_std_ = static_cast<float>(1.0 / std::sqrt(variance));
}

uint64_t IdxDataset::fingerprint() const {
  ContentChecksum sum;
  sum.add_array("images", images_);
  sum.add_array("labels", labels_);
  return sum.value();
}

int32_t IdxDataset::load(int64_t index, uint64_t, float* out) const {
  const uint8_t* pixels = image_bytes(index);
  for (int64_t i = 0; i < height_ * width_; ++i) out[i] = (static_cast<float>(pixels[i]) - mean_) * inv_std_;
  return labels_[index];
}

DataSplits open_idx_directory(const std::string& directory) {
  if (!std::filesystem::is_directory(directory)) throw UsageError("data directory '" + directory + "' does not exist");
  auto train = std::make_unique<IdxDataset>(existing(directory, "train-images-idx3-ubyte"),
                                            existing(directory, "train-labels-idx1-ubyte"), "train");
  auto eval = std::make_unique<IdxDataset>(existing(directory, "t10k-images-idx3-ubyte"),
                                           existing(directory, "t10k-labels-idx1-ubyte"), "t10k");
  if (eval->image_shape().height != train->image_shape().height || eval->image_shape().width != train->image_shape().width)
    throw UsageError("the training and test images in '" + directory + "' differ in size");
  eval->normalise_like(*train);
  DataSplits splits;
  splits.train = std::move(train);
  splits.eval = std::move(eval);
  return splits;
}

}  // namespace sb::models
