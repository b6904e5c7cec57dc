#include "bench/micro/results_reporter.hpp"

#include <cstdio>
#include <utility>

#include "common/check.hpp"
#include "common/usage_error.hpp"
#include "results/save_once.hpp"

namespace sb {

std::unique_ptr<benchmark::BenchmarkReporter> make_display_reporter(const std::string& format, bool color,
                                                                    bool tabular) {
  if (format == "console") {
    int options = benchmark::ConsoleReporter::OO_None;
    if (color) options |= benchmark::ConsoleReporter::OO_Color;
    if (tabular) options |= benchmark::ConsoleReporter::OO_Tabular;
    return std::make_unique<benchmark::ConsoleReporter>(static_cast<benchmark::ConsoleReporter::OutputOptions>(options));
  }
  if (format == "json") return std::make_unique<benchmark::JSONReporter>();
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // still Google Benchmark's, and asked for by name
  if (format == "csv") return std::make_unique<benchmark::CSVReporter>();
#pragma GCC diagnostic pop
  throw UsageError("--benchmark_format is console, json or csv, not '" + format + "'");
}

MicroResultsReporter::MicroResultsReporter(std::unique_ptr<benchmark::BenchmarkReporter> display,
                                           std::unique_ptr<ResultsFile> file, RunMetadata metadata,
                                           std::function<void(const std::string&)> phase)
    : display_(std::move(display)), phase_(std::move(phase)), file_(std::move(file)), metadata_(std::move(metadata)) {}

bool MicroResultsReporter::ReportContext(const Context& context) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ran_ = true;
  }
  return display_->ReportContext(context);
}

namespace {
// Per iteration, in microseconds, from the run's own time unit.
double microseconds(double adjusted, benchmark::TimeUnit unit) {
  return adjusted * 1e6 / benchmark::GetTimeUnitMultiplier(unit);
}
}  // namespace

void MicroResultsReporter::ReportRuns(const std::vector<Run>& runs) {
  display_->ReportRuns(runs);
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Run& run : runs) {
    MicroRow row;
    row.name = run.benchmark_name();
    row.error = run.error_occurred ? run.error_message : "";
    row.iterations = run.iterations;
    if (!run.error_occurred) {
      row.real_time_us = microseconds(run.GetAdjustedRealTime(), run.time_unit);
      row.cpu_time_us = microseconds(run.GetAdjustedCPUTime(), run.time_unit);
    }
    for (const auto& [name, counter] : run.counters) {
      if (name == "bytes_per_second") row.traffic_GBps = counter.value * 1e-9;
      else row.counters[name] = counter.value;
    }
    rows_.push_back(std::move(row));
  }
  if (!runs.empty()) phase_("running the benchmarks after " + runs.back().benchmark_name());
}

bool MicroResultsReporter::ran() {
  std::lock_guard<std::mutex> lock(mutex_);
  return ran_;
}

void MicroResultsReporter::save(const std::string& status) {
  std::lock_guard<std::mutex> lock(mutex_);
  save_results_once(
      file_, status,
      [&](ResultsFile& file) {
        write_run_metadata(file.root(), metadata_);
        write_micro_results(file.root(), rows_);
        write_run_end(file.root(), status);
      },
      "the table printed holds the same figures", stderr);
}

void MicroResultsReporter::discard() {
  std::lock_guard<std::mutex> lock(mutex_);
  file_.reset();
}

}  // namespace sb
