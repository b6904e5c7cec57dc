#include "bench/buckets/results_saver.hpp"

#include "results/save_once.hpp"

namespace sb {

void BucketsResultsSaver::set_profile(const BackwardProfile& profile) {
  std::lock_guard<std::mutex> lock(mutex_);
  profile_ = profile;
}

void BucketsResultsSaver::add(const std::string& sweep, const BucketRow& row, double cycle_ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (sweeps_.empty() || sweeps_.back().name != sweep) sweeps_.push_back({sweep, {}, cycle_ms});
  sweeps_.back().rows.push_back(row);
}

void BucketsResultsSaver::save(const std::string& status) {
  std::lock_guard<std::mutex> lock(mutex_);
  save_results_once(
      file_, status, [&](ResultsFile& file) { write(file, status); },
      join_clauses(snapshots_.left_on_disk(), "the table printed so far holds the same figures"));
}

void BucketsResultsSaver::snapshot(const std::string& after) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (file_)
    snapshots_.save_at_break(*file_, after, [&](ResultsFile& file, const std::string& status) { write(file, status); });
}

void BucketsResultsSaver::write(ResultsFile& file, const std::string& status) const {
  write_run_metadata(file.root(), metadata_);
  write_run_end(file.root(), status);
  if (profile_) write_buckets_results(file.root(), settings_, *profile_, sweeps_);
}

}  // namespace sb
