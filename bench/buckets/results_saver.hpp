#pragma once
// sb-buckets' results file, written once: at the end of the sweep, or with the rows measured so
// far when a fault ends the job early (a timeout, SIGINT/SIGTERM), from the watchdog's thread;
// and a snapshot under the same name after each finished sweep, for a rank 0 killed outright.
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "collectives/buckets/backward_profile.hpp"
#include "results/buckets_record.hpp"
#include "results/results_file.hpp"
#include "results/run_metadata.hpp"
#include "results/snapshot.hpp"

namespace sb {

class BucketsResultsSaver {
 public:
  // file: rank 0's (null on the other ranks, whose saves do nothing).
  BucketsResultsSaver(std::unique_ptr<ResultsFile> file, const RunMetadata& metadata, const BucketsSettings& settings)
      : file_(std::move(file)), metadata_(metadata), settings_(settings) {}

  // What the run has so far: the profile it replays, then each measured row under its sweep's
  // name (no-overlap, fused, ddp, ddp@poll, ...), in the order measured.
  void set_profile(const BackwardProfile& profile);
  void add(const std::string& sweep, const BucketRow& row, double cycle_ms = 0);

  // Writes the file with `status` ("complete", or why the run ended early) and commits it; later
  // calls do nothing. Before the profile is known, the file holds the run's metadata alone.
  // Throws LibraryError when the file cannot be written.
  void save(const std::string& status);
  // The rows so far under the final name after a finished sweep (but the last), their status saying
  // the run goes on (results/snapshot.hpp). Never throws: a failure is one line on stderr.
  void snapshot(const std::string& after);
  void plan_snapshots(size_t sweeps) { snapshots_.plan_breaks(sweeps, "sweeps"); }

 private:
  void write(ResultsFile& file, const std::string& status) const;

  std::mutex mutex_;
  std::unique_ptr<ResultsFile> file_;  // null once saved
  RunMetadata metadata_;
  BucketsSettings settings_;
  std::optional<BackwardProfile> profile_;
  std::vector<BucketSweep> sweeps_;
  Snapshots snapshots_{"sb-buckets"};
};

}  // namespace sb
