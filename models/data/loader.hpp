#pragma once
// Batches for training and evaluation. The Sampler decides which samples a rank sees: a
// deterministic per-epoch permutation from the seed, cut into global batches, each global batch
// cut into equal contiguous shards by rank, so N ranks together see exactly the samples one rank
// would. The Loader builds a rank's batches on worker threads into a bounded queue, in order: the
// workers share each batch, a run of samples at a time, so a batch is ready as soon as all of them
// can build it, and the batches held are the prefetch window's, whatever the number of workers.
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "models/data/dataset.hpp"
#include "models/data/host_memory.hpp"

namespace sb::models {

class Sampler {
 public:
  // Training: shuffle and drop the last incomplete global batch; the global batch must divide by
  // nranks (UsageError otherwise). Evaluation: in order, every sample, the last batch short.
  Sampler(int64_t dataset_size, int64_t global_batch, int rank, int nranks, uint64_t seed, bool training);
  int64_t batches_per_epoch() const;
  int64_t global_batch() const { return global_batch_; }
  // A batch-size ramp: later epochs cut the same permutation into batches of another size (and
  // equal shards again).
  void set_global_batch(int64_t global_batch);
  // Unequal shards (--balance): rank r takes shares[r] samples of every global batch, in rank
  // order; the shares must sum to the global batch, each at least 1. Empty: equal shards.
  void set_shares(std::vector<int64_t> shares);
  const std::vector<int64_t>& shares() const { return shares_; }
  // This rank's sample indices in batch `batch` of `epoch`.
  std::vector<int64_t> indices(int64_t epoch, int64_t batch) const;
  bool training() const { return training_; }
  uint64_t seed() const { return seed_; }

 private:
  // The last epoch's permutation, shared by copies of this sampler (same seed and size).
  struct PermutationCache {
    std::mutex mutex;
    int64_t epoch = -1;
    std::vector<int64_t> order;
  };
  const std::vector<int64_t>& permutation(int64_t epoch) const;  // with cache_->mutex held
  int64_t size_, global_batch_;
  std::vector<int64_t> shares_;  // per rank; empty: equal
  int rank_, nranks_;
  uint64_t seed_;
  bool training_;
  std::shared_ptr<PermutationCache> cache_ = std::make_shared<PermutationCache>();
};

struct Batch {
  int64_t index = 0;
  HostFloats images;  // count x C x H x W, in the loader's host memory
  std::vector<int32_t> labels;
  int64_t skipped = 0;  // corrupt samples left out of this batch
  int64_t count() const { return static_cast<int64_t>(labels.size()); }
};

class Loader {
 public:
  // memory: where batches are built (a GPU backend's pinned pool), or nullptr for the heap; it
  // must outlive the loader and its batches. Up to `prefetch` batches (at least 1) are built ahead,
  // counted from the one next() returns next.
  Loader(const Dataset& dataset, Sampler sampler, int workers, int prefetch, HostMemory* memory = nullptr);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // Starts producing the batches of an epoch from first_batch on (a resumed run starts mid-epoch).
  void start_epoch(int64_t epoch, int64_t first_batch = 0);
  // The next batch in order, or nothing at the end of the epoch.
  std::optional<Batch> next();
  const Sampler& sampler() const { return sampler_; }
  // Stop the workers and change how the following epochs are cut (Sampler's setters).
  void set_global_batch(int64_t global_batch);
  void set_shares(std::vector<int64_t> shares);
  int64_t skipped_total() const { return skipped_total_; }
  // What the workers alone could deliver: images built (decoded, not skipped) per second of a
  // worker's building time, times the workers (0 before the first batch). Below the training
  // rate, which counts the images trained, the loader is the bottleneck.
  double images_per_s() const;
  int workers() const { return workers_; }
  // Stops and joins the workers (start_epoch starts them again).
  void stop();

 private:
  // A batch being built: its images have room for every sample, and a label of -1 marks a sample
  // not loaded yet or one that did not decode (left out when the batch is complete).
  struct Building {
    Batch batch;
    std::vector<int64_t> indices;
    int64_t claimed = 0, loaded = 0;  // samples, in order of position
  };
  void work();
  Building open(int64_t batch) const;
  // Loads positions [first, last) of a batch; returns the images decoded.
  int64_t load(const std::vector<int64_t>& indices, int64_t first, int64_t last, Batch& batch) const;
  Building* unclaimed();  // the earliest batch with samples no worker has claimed, with mutex_ held

  const Dataset& dataset_;
  Sampler sampler_;
  int workers_, prefetch_;
  HostMemory* memory_;
  std::vector<std::thread> threads_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  int64_t epoch_ = 0, next_open_ = 0, next_out_ = 0, end_ = 0;
  int opening_ = 0;  // workers allocating a batch outside the lock
  bool stopping_ = false;
  std::map<int64_t, Building> building_;
  std::map<int64_t, Batch> ready_;
  int64_t skipped_total_ = 0;
  double build_seconds_ = 0;  // summed over the workers
  int64_t built_images_ = 0;
};

}  // namespace sb::models
