#pragma once
// A labelled image data set, read one sample at a time into a float NCHW slot. Samples are
// addressed by index so that the loader can shard a global batch over ranks by index and any
// worker thread can load any sample; augmentation randomness comes from a per-sample key, so a
// sample's pixels depend on (seed, epoch, index) only, never on which thread or rank loaded it.
#include <cstdint>
#include <memory>
#include <string>

namespace sb::models {

struct ImageShape {
  int64_t channels = 1, height = 28, width = 28;
  int64_t pixels() const { return channels * height * width; }
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual std::string name() const = 0;
  virtual int64_t size() const = 0;
  virtual int64_t num_classes() const = 0;
  virtual ImageShape image_shape() const = 0;
  // Writes sample `index` (normalised, NCHW) to out and returns its label, or -1 when the sample
  // cannot be decoded (a corrupt file inside a data set: the loader skips and counts it).
  // augment_key != 0 asks for training augmentation drawn from that key.
  virtual int32_t load(int64_t index, uint64_t augment_key, float* out) const = 0;
  // Equal on two copies that hold the same samples, and (but for a hash collision) different
  // where they differ in what it covers: IDX files' pixels and labels; an image folder's class
  // and file names (not the JPEGs' bytes, which would mean reading every file at start);
  // synthetic data's counts and seed. Not the image size, which resizing changes. Each node may
  // read its own copy, so the ranks compare it (training_setup.hpp).
  virtual uint64_t fingerprint() const = 0;
  // Sources that crop or draw at any size (JPEG folders, synthetic) can change it between epochs
  // (progressive resizing); only while no loader is reading.
  virtual bool resizable() const { return false; }
  virtual void set_image_size(int64_t /*pixels*/) {}
};

// A training split and an evaluation split of one data set.
struct DataSplits {
  std::unique_ptr<Dataset> train, eval;
};

// --data: "fashion-mnist" (the Debian package's files), "synthetic[:SIZE]" (random images for
// throughput runs; SIZE px, 224 by default), "imagefolder:DIR" (JPEGs cropped to image_size px),
// or a directory holding the four IDX files. Throws UsageError for anything that cannot be opened
// or read as such.
DataSplits open_data(const std::string& spec, int64_t image_size = 224);

inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

}  // namespace sb::models
