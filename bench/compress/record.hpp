#pragma once
// sb-compress's results: the rows measured per compressor, the convergence check's outcome, and
// the HDF5 file (/compress, results/SCHEMA.md) written once: at the end of the run, or with what
// was measured when a fault ends the job early (a timeout, SIGINT/SIGTERM), from the watchdog's
// thread; and a snapshot under the same name after each compressor, for a rank 0 killed outright.
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bench/compress/options.hpp"
#include "collectives/compress/compressor.hpp"
#include "collectives/compress/ef_convergence.hpp"
#include "results/results_file.hpp"
#include "results/run_metadata.hpp"
#include "results/snapshot.hpp"

namespace sb {

// One compressor at one gradient size.
struct CompressRow {
  uint64_t bytes = 0, payload_bytes = 0;
  double ratio = 0, rel_error = 0, compress_GBps = 0, decompress_GBps = 0;
  double memcpy_GBps = 0;  // memcpy of the same gradient, measured just before: the ceiling
  // --device: the compressed allreduce on GPU buffers and ncclAllReduce + average; -1 where the
  // compressor has no device form.
  double device_allreduce_us = -1, nccl_allreduce_us = -1, device_speedup = -1;
  double allreduce_us = 0, mpi_allreduce_us = 0, speedup = 0;
};

// A compressor's rows, one per size, and its convergence check.
struct CompressorResults {
  std::string name;
  Carrier carrier;
  std::vector<CompressRow> rows;
  ConvergenceResult convergence;  // when the check ran
};

// The convergence check's settings for --convergence N: N reference steps, at most 20 N.
ConvergenceSettings convergence_settings(const CompressOptions& o);

class CompressResultsSaver {
 public:
  // file: rank 0's (null on the other ranks, whose saves do nothing).
  CompressResultsSaver(std::unique_ptr<ResultsFile> file, const RunMetadata& metadata, const CompressOptions& options)
      : file_(std::move(file)), metadata_(metadata), options_(options) {}

  // What the run has so far, in the order measured: a compressor, its rows, then (once every
  // compressor's rows are in) each one's convergence.
  void start_compressor(const std::string& name, Carrier carrier);
  void add_row(const CompressRow& row);
  void add_convergence(size_t compressor, const ConvergenceResult& result);
  // A copy, for the summary printed at the end.
  std::vector<CompressorResults> results();

  // Writes the file with `status` ("complete", or why the run ended early) and commits it; later
  // calls do nothing. Throws LibraryError when the file cannot be written.
  void save(const std::string& status);
  // What is in so far under the final name after a compressor's rows or convergence check (but the
  // last), its status saying the run goes on (results/snapshot.hpp). Never throws: a failure is one
  // line on stderr.
  void snapshot(const std::string& after);
  void plan_snapshots(size_t steps) { snapshots_.plan_breaks(steps, "steps"); }

 private:
  std::mutex mutex_;
  std::unique_ptr<ResultsFile> file_;  // null once saved
  RunMetadata metadata_;
  const CompressOptions& options_;
  std::vector<CompressorResults> results_;
  size_t converged_ = 0;  // results_[i].convergence is set for i < converged_
  Snapshots snapshots_{"sb-compress"};
};

}  // namespace sb
