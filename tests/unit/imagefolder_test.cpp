// The JPEG ImageFolder path on real JPEGs, written from Fashion-MNIST by write_image_folder (the
// code behind sb-idx2folder): decoding against the original pixels, deterministic augmentation,
// corrupt and truncated files skipped and counted, and malformed folders as usage errors.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

#include "common/usage_error.hpp"
#include "models/data/idx.hpp"
#include "models/data/imagefolder.hpp"
#include "models/data/jpeg.hpp"
#include "models/data/loader.hpp"

namespace sb::models {
namespace {

namespace fs = std::filesystem;

class ImageFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = (fs::temp_directory_path() / ("sb-imagefolder-" + std::to_string(::getpid()))).string();
    splits_ = open_idx_directory(kFashionMnistDir);
    write_image_folder(idx(*splits_.train), root_ + "/train", 200, 95);
    write_image_folder(idx(*splits_.eval), root_ + "/val", 50, 95);
  }
  void TearDown() override { fs::remove_all(root_); }
  static const IdxDataset& idx(const Dataset& d) { return static_cast<const IdxDataset&>(d); }
  std::string root_;
  DataSplits splits_;
};

TEST_F(ImageFolder, JpegsDecodeToTheOriginalPixels) {
  const IdxDataset& train = idx(*splits_.train);
  double error = 0;
  int64_t count = 0;
  for (int64_t i : {0, 7, 199}) {
    std::string label = std::to_string(train.label(i));
    RgbImage image;
    ASSERT_TRUE(decode_jpeg(read_file(root_ + "/train/" + label + "/" + std::to_string(i) + ".jpg"), image));
    ASSERT_EQ(image.width, 28);
    ASSERT_EQ(image.height, 28);
    for (int p = 0; p < 28 * 28; ++p)
      for (int c = 0; c < 3; ++c, ++count) error += std::abs(image.pixels[p * 3 + c] - train.image_bytes(i)[p]);
  }
  EXPECT_LT(error / count, 2.0);  // mean absolute error in 8-bit levels at quality 95
}

TEST_F(ImageFolder, ClassesSamplesAndDeterministicAugmentation) {
  DataSplits folder = open_image_folder(root_, 24);
  EXPECT_EQ(folder.train->num_classes(), 10);
  EXPECT_EQ(folder.train->size(), 200);
  EXPECT_EQ(folder.eval->size(), 50);
  EXPECT_EQ(folder.train->image_shape().channels, 3);
  std::vector<float> a(3 * 24 * 24), b(a.size()), c(a.size());
  const int32_t label = folder.train->load(5, 1234567, a.data());
  EXPECT_GE(label, 0);
  EXPECT_EQ(folder.train->load(5, 1234567, b.data()), label);
  EXPECT_EQ(a, b);  // the same key, the same crop and flip
  folder.train->load(5, 7654321, c.data());
  EXPECT_NE(a, c);
  for (float v : a) ASSERT_TRUE(std::isfinite(v) && std::abs(v) < 3.0f);
  // Evaluation is a center crop, the same every time.
  folder.eval->load(3, 0, a.data());
  folder.eval->load(3, 0, b.data());
  EXPECT_EQ(a, b);
}

TEST_F(ImageFolder, CorruptAndTruncatedImagesAreSkippedAndCounted) {
  std::ofstream(root_ + "/train/3/garbage.jpg") << "this is not a JPEG";
  const std::vector<uint8_t> real = read_file(root_ + "/val/9/0.jpg");
  ASSERT_FALSE(real.empty());
  std::ofstream cut(root_ + "/train/3/truncated.jpg", std::ios::binary);
  cut.write(reinterpret_cast<const char*>(real.data()), static_cast<std::streamsize>(real.size() / 2));
  cut.close();
  DataSplits folder = open_image_folder(root_, 28);
  ASSERT_EQ(folder.train->size(), 202);
  Loader loader(*folder.train, Sampler(202, 101, 0, 1, 3, true), 2, 2);
  loader.start_epoch(0);
  int64_t images = 0;
  while (auto batch = loader.next()) images += batch->count();
  EXPECT_EQ(loader.skipped_total(), 2);
  EXPECT_EQ(images, 200);
}

// The loader's own rate, set against the training rate (images trained), counts the images it
// decoded: with every file undecodable it delivered nothing, though it counted every file read.
TEST_F(ImageFolder, TheLoadersRateCountsOnlyDecodedImages) {
  for (const fs::directory_entry& file : fs::recursive_directory_iterator(root_ + "/train"))
    if (file.is_regular_file()) std::ofstream(file.path()) << "not a JPEG";
  DataSplits folder = open_image_folder(root_, 28);
  Loader loader(*folder.train, Sampler(200, 100, 0, 1, 3, true), 2, 2);
  loader.start_epoch(0);
  while (auto batch = loader.next()) EXPECT_EQ(batch->count(), 0);
  EXPECT_EQ(loader.skipped_total(), 200);
  EXPECT_EQ(loader.images_per_s(), 0.0);
}

// TurboJPEG 2.1 leaves a decoder unusable after some header errors: every later header read on
// it failed with the same message, so one damaged image in a worker's batch cost the rest.
TEST_F(ImageFolder, ADamagedHuffmanTableCostsOnlyItsOwnImage) {
  const std::vector<uint8_t> good = read_file(root_ + "/val/9/0.jpg");
  std::vector<uint8_t> bad = good;
  size_t dht = 0;
  while (dht + 1 < bad.size() && !(bad[dht] == 0xFF && bad[dht + 1] == 0xC4)) ++dht;
  ASSERT_LT(dht + 21, bad.size()) << "no Huffman table in the JPEG";
  for (size_t i = dht + 5; i < dht + 21; ++i) bad[i] = 0xFF;  // its 16 code counts: far more codes than 256
  RgbImage image;
  ASSERT_TRUE(decode_jpeg(good, image));
  EXPECT_FALSE(decode_jpeg(bad, image));
  EXPECT_TRUE(decode_jpeg(good, image)) << "the decoder of this thread stayed broken";
  EXPECT_EQ(image.width, 28);
}

// Another node's copy, under another path, has the same fingerprint; a copy with as many images
// and classes but a class folder named otherwise (its label then means another class) or an
// image of another name has another.
TEST_F(ImageFolder, TheFingerprintTellsCopiesThatDifferInNamesApart) {
  const std::string copy = root_ + "-copy";
  fs::copy(root_, copy, fs::copy_options::recursive);
  const auto fingerprints = [](const std::string& root) {
    DataSplits splits = open_image_folder(root, 28);
    return std::make_pair(splits.train->fingerprint(), splits.eval->fingerprint());
  };
  const auto original = fingerprints(root_);
  EXPECT_NE(original.first, original.second);
  EXPECT_EQ(fingerprints(copy), original);
  // The first training image of class 0 under another name: the training split differs.
  std::vector<fs::path> class0(fs::directory_iterator(copy + "/train/0"), fs::directory_iterator());
  ASSERT_FALSE(class0.empty());
  const fs::path first = *std::min_element(class0.begin(), class0.end());
  fs::rename(first, first.parent_path() / ("x" + first.filename().string()));
  EXPECT_NE(fingerprints(copy).first, original.first);
  EXPECT_EQ(fingerprints(copy).second, original.second);
  fs::rename(first.parent_path() / ("x" + first.filename().string()), first);
  EXPECT_EQ(fingerprints(copy), original);
  // Class 9 named "9b" in both splits: as many classes and images, the same sorted order.
  fs::rename(copy + "/train/9", copy + "/train/9b");
  fs::rename(copy + "/val/9", copy + "/val/9b");
  const auto renamed = fingerprints(copy);
  EXPECT_NE(renamed.first, original.first);
  EXPECT_NE(renamed.second, original.second);
  fs::remove_all(copy);
}

TEST_F(ImageFolder, MalformedFoldersAreUsageErrors) {
  EXPECT_THROW(open_image_folder(root_ + "/nowhere", 28), UsageError);
  fs::create_directories(root_ + "/empty/train");
  EXPECT_THROW(open_image_folder(root_ + "/empty", 28), UsageError);  // no classes
  fs::create_directories(root_ + "/val/99");
  EXPECT_THROW(open_image_folder(root_, 28), UsageError);  // a val/ class unknown to train/
  EXPECT_THROW(open_data("imagefolder:" + root_ + "/empty", 28), UsageError);
}

}  // namespace
}  // namespace sb::models
