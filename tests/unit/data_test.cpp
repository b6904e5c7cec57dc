// The IDX reader on the real Fashion-MNIST files and on broken copies of them, the synthetic
// source, and the sampler's sharding: N ranks together see exactly the samples one rank sees.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "common/usage_error.hpp"
#include "models/data/idx.hpp"
#include "models/data/loader.hpp"
#include "models/data/synthetic.hpp"

namespace sb::models {
namespace {

std::string temp_dir() {
  const auto dir = std::filesystem::temp_directory_path() / ("sb-data-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

TEST(Idx, ReadsTheFashionMnistPackage) {
  DataSplits splits = open_data("fashion-mnist");
  EXPECT_EQ(splits.train->size(), 60000);
  EXPECT_EQ(splits.eval->size(), 10000);
  EXPECT_EQ(splits.train->num_classes(), 10);
  EXPECT_EQ(splits.train->image_shape().height, 28);
  // Fashion-MNIST's first training label is 9 (ankle boot); the first test label is 9 too.
  std::vector<float> image(28 * 28);
  EXPECT_EQ(splits.train->load(0, 0, image.data()), 9);
  EXPECT_EQ(splits.eval->load(0, 0, image.data()), 9);
  // Normalised: the pixels of the whole training set have mean ~0.
  double sum = 0;
  for (int i = 0; i < 1000; ++i) {
    splits.train->load(i, 0, image.data());
    for (float v : image) sum += v;
  }
  EXPECT_NEAR(sum / (1000.0 * 784), 0.0, 0.05);
}

// The fingerprint covers every pixel and label: one label changed changes it; synthetic data's
// does not change with the image size (progressive resizing).
TEST(Idx, TheFingerprintCoversPixelsAndLabels) {
  const std::string dir = temp_dir();
  for (const char* name : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz"})
    std::filesystem::copy(std::string(kFashionMnistDir) + "/" + name, dir + "/" + name);
  IdxArray labels = read_idx(std::string(kFashionMnistDir) + "/t10k-labels-idx1-ubyte.gz");
  write_idx(dir + "/t10k-labels-idx1-ubyte.gz", labels);
  const DataSplits original = open_data("fashion-mnist"), copy = open_data(dir);
  EXPECT_EQ(copy.train->fingerprint(), original.train->fingerprint());
  EXPECT_EQ(copy.eval->fingerprint(), original.eval->fingerprint());
  labels.bytes[9999] = static_cast<uint8_t>((labels.bytes[9999] + 1) % 10);
  write_idx(dir + "/t10k-labels-idx1-ubyte.gz", labels);
  const DataSplits relabelled = open_data(dir);
  EXPECT_EQ(relabelled.eval->size(), original.eval->size());
  EXPECT_NE(relabelled.eval->fingerprint(), original.eval->fingerprint());
  EXPECT_EQ(relabelled.train->fingerprint(), original.train->fingerprint());
  std::filesystem::remove_all(dir);

  DataSplits synthetic = open_data("synthetic:32");
  const uint64_t at32 = synthetic.train->fingerprint();
  synthetic.train->set_image_size(24);
  EXPECT_EQ(synthetic.train->fingerprint(), at32);
  EXPECT_NE(synthetic.eval->fingerprint(), at32);
}

TEST(Idx, MissingTruncatedAndMalformedFilesAreUsageErrors) {
  const std::string dir = temp_dir();
  EXPECT_THROW(read_idx(dir + "/nothing.gz"), UsageError);
  IdxArray labels = read_idx(std::string(kFashionMnistDir) + "/t10k-labels-idx1-ubyte.gz");
  ASSERT_EQ(labels.dims, std::vector<int64_t>{10000});
  // Truncated: the header promises 10000 labels, the file holds 100.
  IdxArray cut = labels;
  cut.bytes.resize(100);
  write_idx(dir + "/cut.gz", cut);
  EXPECT_THROW(read_idx(dir + "/cut.gz"), UsageError);
  // Not IDX at all.
  std::ofstream(dir + "/text") << "hello, not an IDX file";
  EXPECT_THROW(read_idx(dir + "/text"), UsageError);
  // A directory with the labels but no images.
  write_idx(dir + "/t10k-labels-idx1-ubyte.gz", labels);
  EXPECT_THROW(open_data(dir), UsageError);
  EXPECT_THROW(open_data(dir + "/missing"), UsageError);
  EXPECT_THROW(open_data("synthetic:3"), UsageError);
  std::filesystem::remove_all(dir);
}

TEST(Sampler, RanksTogetherSeeExactlyTheSamplesOfOneRank) {
  const int64_t size = 1000, batch = 96;
  Sampler one(size, batch, 0, 1, 42, true);
  EXPECT_EQ(one.batches_per_epoch(), 10);  // the last 40 samples are dropped
  for (int nranks : {2, 3, 4}) {
    std::vector<Sampler> ranks;
    for (int r = 0; r < nranks; ++r) ranks.emplace_back(size, batch, r, nranks, 42, true);
    for (int64_t b = 0; b < one.batches_per_epoch(); ++b) {
      std::vector<int64_t> joined;
      for (const Sampler& s : ranks) {
        const std::vector<int64_t> part = s.indices(3, b);
        EXPECT_EQ(static_cast<int64_t>(part.size()), batch / nranks);
        joined.insert(joined.end(), part.begin(), part.end());
      }
      EXPECT_EQ(joined, one.indices(3, b));
    }
  }
  // Another epoch is another permutation; every epoch covers distinct samples.
  EXPECT_NE(one.indices(0, 0), one.indices(1, 0));
  std::set<int64_t> seen;
  for (int64_t b = 0; b < one.batches_per_epoch(); ++b)
    for (int64_t i : one.indices(0, b)) seen.insert(i);
  EXPECT_EQ(seen.size(), 960u);
  EXPECT_THROW(Sampler(size, 10, 0, 3, 1, true), UsageError);
  EXPECT_THROW(Sampler(size, 2000, 0, 1, 1, true), UsageError);
}

TEST(Sampler, EvaluationCoversEverySampleOnceOverRanks) {
  std::vector<int64_t> all;
  for (int r = 0; r < 3; ++r) {
    Sampler s(1001, 100, r, 3, 0, false);
    EXPECT_EQ(s.batches_per_epoch(), 11);
    for (int64_t b = 0; b < s.batches_per_epoch(); ++b) {
      auto part = s.indices(0, b);
      all.insert(all.end(), part.begin(), part.end());
    }
  }
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), 1001u);
  for (int64_t i = 0; i < 1001; ++i) EXPECT_EQ(all[i], i);
}

TEST(Loader, DeliversEveryBatchInOrderFromWorkerThreads) {
  SyntheticDataset data(500, 7, {1, 4, 4}, 9);
  Loader loader(data, Sampler(500, 32, 0, 1, 5, true), 3, 2);
  for (int64_t epoch : {0, 1}) {
    loader.start_epoch(epoch);
    int64_t expected = 0;
    while (auto batch = loader.next()) {
      EXPECT_EQ(batch->index, expected);
      const std::vector<int64_t> indices = loader.sampler().indices(epoch, expected);
      ASSERT_EQ(batch->count(), 32);
      for (int64_t i = 0; i < 32; ++i) EXPECT_EQ(batch->labels[i], indices[i] % 7);
      ++expected;
    }
    EXPECT_EQ(expected, 15);
  }
  // A resumed epoch starts at the batch it is told.
  loader.start_epoch(1, 12);
  EXPECT_EQ(loader.next()->index, 12);
}

// A data set whose images take a while each (a JPEG decode's stand-in), counting the loads at work.
class SlowDataset final : public Dataset {
 public:
  std::string name() const override { return "slow"; }
  int64_t size() const override { return 64; }
  int64_t num_classes() const override { return 2; }
  ImageShape image_shape() const override { return {1, 2, 2}; }
  int32_t load(int64_t index, uint64_t, float* out) const override {
    const int now = ++loading_;
    for (int seen = most_.load(); now > seen && !most_.compare_exchange_weak(seen, now);) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::fill(out, out + 4, 0.0f);
    --loading_;
    return static_cast<int32_t>(index % 2);
  }
  uint64_t fingerprint() const override { return 0; }
  int most_at_once() const { return most_; }

 private:
  mutable std::atomic<int> loading_{0}, most_{0};
};

// The workers share a batch: with a window of one batch, all 8 load its samples at once (each
// built a batch of its own, and the window had to hold as many batches as workers to keep them busy).
TEST(Loader, EveryWorkerWorksOnTheOneBatchTheWindowHolds) {
  SlowDataset data;
  Loader loader(data, Sampler(64, 16, 0, 1, 5, false), 8, 1);
  loader.start_epoch(0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // several loads' time: all have claimed some
  int64_t batches = 0;
  while (auto batch = loader.next()) {
    for (int64_t i = 0; i < batch->count(); ++i) EXPECT_EQ(batch->labels[i], (batch->index * 16 + i) % 2);
    ++batches;
  }
  EXPECT_EQ(batches, 4);
  EXPECT_EQ(data.most_at_once(), 8);
}

// The batches in memory are the window's and the one being trained, however many workers there
// are: what a GPU rank pins (8 workers held 8 batches and more).
TEST(Loader, HoldsTheWindowsBatchesWhateverTheWorkers) {
  SyntheticDataset data(640, 10, {3, 8, 8}, 1);
  CachingHostMemory memory([](size_t bytes) { return std::malloc(bytes); }, [](void* block) { std::free(block); });
  Loader loader(data, Sampler(640, 32, 0, 1, 5, true), 8, 2, &memory);
  loader.start_epoch(0);
  int64_t batches = 0;
  while (auto batch = loader.next()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // a step: the workers run ahead meanwhile
    ++batches;
  }
  EXPECT_EQ(batches, 20);
  EXPECT_EQ(memory.raw_allocations(), 3u) << "the window's 2 batches and the step's";
}

// Every fifth image fails to decode. The workers load a batch's samples in parallel, and the batch
// is what one worker loading them in turn would make: the rest in order, the failures counted.
class DamagedDataset final : public Dataset {
 public:
  std::string name() const override { return "damaged"; }
  int64_t size() const override { return 300; }
  int64_t num_classes() const override { return 7; }
  ImageShape image_shape() const override { return {1, 2, 3}; }
  int32_t load(int64_t index, uint64_t, float* out) const override {
    if (index % 5 == 0) return -1;
    std::fill(out, out + 6, static_cast<float>(index));
    return static_cast<int32_t>(index % 7);
  }
  uint64_t fingerprint() const override { return 0; }
};

TEST(Loader, LeavesOutWhatDoesNotDecodeAndKeepsTheOrder) {
  DamagedDataset data;
  Loader loader(data, Sampler(300, 50, 0, 1, 9, true), 4, 3);
  loader.start_epoch(2);
  int64_t skipped = 0;
  while (auto batch = loader.next()) {
    std::vector<int64_t> kept;
    for (int64_t index : loader.sampler().indices(2, batch->index))
      if (index % 5 != 0) kept.push_back(index);
    ASSERT_EQ(batch->count(), static_cast<int64_t>(kept.size()));
    EXPECT_EQ(batch->skipped, 50 - batch->count());
    EXPECT_EQ(batch->images.size(), kept.size() * 6);
    for (size_t i = 0; i < kept.size(); ++i) {
      EXPECT_EQ(batch->labels[i], kept[i] % 7);
      EXPECT_EQ(batch->images[i * 6], static_cast<float>(kept[i]));
      EXPECT_EQ(batch->images[i * 6 + 5], static_cast<float>(kept[i]));
    }
    skipped += batch->skipped;
  }
  EXPECT_EQ(skipped, 60);
  EXPECT_EQ(loader.skipped_total(), 60);
}

}  // namespace
}  // namespace sb::models
