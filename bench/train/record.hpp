#pragma once
// sb-train's results in its HDF5 file (/train, results/SCHEMA.md): when the run ends, or with what
// it finished when a fault ends it early; and as they stand after every epoch (a snapshot).
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bench/train/options.hpp"
#include "models/trainer.hpp"
#include "results/results_file.hpp"
#include "results/snapshot.hpp"
#include "results/run_metadata.hpp"

namespace sb {

// What only a collective can gather, on rank 0: every rank's per-step times, as [ranks x steps]
// (row-major), and its peak host and device memory.
struct RankRecords {
  std::vector<double> data, compute, wait, comm, negotiation;
  size_t steps = 0;
  std::vector<int64_t> peak_host_bytes;  // [ranks]: each process's max RSS (common/peak_memory.hpp)
  std::vector<int64_t> peak_device_bytes;  // [ranks]: TrainResult::peak_device_bytes; empty on the host
};

// Collective over MPI_COMM_WORLD: each rank's StepTimes, its peak_host_bytes and its
// r.peak_device_bytes, on rank 0.
RankRecords gather_rank_records(const models::TrainResult& r, int64_t peak_host_bytes, int nranks);

// Writes the results file once, from whichever thread comes first: the training thread at the end
// of the run (every rank's records gathered), or the watchdog's fault handler, or the training
// thread when train() threw, with the run's TrainProgress and the reason it ended (`status`).
// A partial file holds what rank 0 recorded: the finished epochs' curve and every finished step's
// time, and rank 0's peak memory; the per-rank records, which only a collective could gather, are
// left out.
class TrainResultsSaver {
 public:
  TrainResultsSaver(std::unique_ptr<ResultsFile> file, const RunMetadata& metadata, const TrainOptions& options);
  ~TrainResultsSaver();

  void set_matmul_gflops(double gflops) { matmul_gflops_ = gflops; }
  // The whole run. Throws LibraryError when the file cannot be written.
  void save_complete(const RunMetadata& metadata, const models::TrainResult& result, const RankRecords& records);
  // The run so far, with why it ended. Never throws: a failure is printed to stderr.
  void save_partial(const models::TrainProgress& progress, const std::string& why);
  // The run so far, under the final name, at the end of every epoch (the training thread), its
  // status saying it is a snapshot: what is left when the process is killed outright (SIGKILL
  // from a launcher or a scheduler after its grace, the OOM killer), which no handler can save
  // from. Each later save replaces it; none comes after the final one. Never throws: a failure
  // is printed to stderr, and the run goes on.
  void save_snapshot(const models::TrainProgress& progress, int64_t epochs_done);
  bool has_snapshot() const { return snapshots_.any(); }

 private:
  void save(const RunMetadata& metadata, const models::TrainResult& result, const RankRecords* records,
            const std::string& status);
  // HDF5 serves one thread at a time: waits kWaitForHdf5 for it, else throws LibraryError.
  static std::unique_lock<std::timed_mutex> lock_hdf5();

  // How long a fault handler waits for the training thread to finish a checkpoint (HDF5 serves
  // one thread at a time) or the final save, before giving up on saving.
  static constexpr std::chrono::seconds kWaitForHdf5{20};
  std::timed_mutex mutex_;
  std::unique_ptr<ResultsFile> file_;  // null once saved
  RunMetadata metadata_;
  const TrainOptions& options_;
  std::atomic<double> matmul_gflops_{0};  // set once training is over: 0 in a partial file
  Snapshots snapshots_{"sb-train"};
};

}  // namespace sb
