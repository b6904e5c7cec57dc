#pragma once
// sb-micro's Google Benchmark reporter: it hands every run to the display reporter that
// --benchmark_format chose (the table, JSON or CSV on stdout, as Google Benchmark prints them) and
// keeps a row of it for the HDF5 file (/micro, results/SCHEMA.md), which it writes once: at the
// end, or with the rows so far when a signal ends the run (from the watchdog's thread).
#include <benchmark/benchmark.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "results/micro_record.hpp"
#include "results/results_file.hpp"
#include "results/run_metadata.hpp"

namespace sb {

// Google Benchmark's own reporter for `format` (console, json, csv); the console table in colour
// when `color`, with the counters as columns when `tabular`.
std::unique_ptr<benchmark::BenchmarkReporter> make_display_reporter(const std::string& format, bool color,
                                                                    bool tabular);

class MicroResultsReporter final : public benchmark::BenchmarkReporter {
 public:
  // `phase` is told each benchmark finished (for the watchdog's message).
  MicroResultsReporter(std::unique_ptr<benchmark::BenchmarkReporter> display, std::unique_ptr<ResultsFile> file,
                       RunMetadata metadata, std::function<void(const std::string&)> phase);

  bool ReportContext(const Context& context) override;
  void ReportRuns(const std::vector<Run>& runs) override;
  void Finalize() override { display_->Finalize(); }

  // Whether any benchmark ran (not with --benchmark_list_tests).
  bool ran();
  // Writes the file with `status` and commits it, naming it on stderr (stdout may be JSON); later
  // calls do nothing. Throws LibraryError when the file cannot be written.
  void save(const std::string& status);
  // Drops the file unwritten (nothing ran).
  void discard();

 private:
  std::unique_ptr<benchmark::BenchmarkReporter> display_;
  std::function<void(const std::string&)> phase_;
  std::mutex mutex_;
  std::unique_ptr<ResultsFile> file_;  // null once saved or discarded
  RunMetadata metadata_;
  std::vector<MicroRow> rows_;
  bool ran_ = false;
};

}  // namespace sb
