#pragma once
// What sb-report draws, before any gnuplot: a plot is named lines of (x, y) points with axis
// titles and scales. The builders (one file per program's results) turn runs into plots; the
// gnuplot writer turns plots into data files, scripts and images, and the summary into text.
#include <string>
#include <utility>
#include <vector>

#include "results/campaign.hpp"

namespace sb::report {

enum class Scale {
  linear,
  log2,   // ranks, bucket MiB
  log10,  // bandwidth, time
  bytes,  // log2, tics labelled 4K, 1M, ...
};

struct Series {
  explicit Series(std::string title_) : title(std::move(title_)) {}

  std::string title;
  std::vector<double> x, y;
  std::vector<std::string> point_labels;  // empty, or one per point (drawn beside it)
  bool reference = false;                 // an ideal or a ceiling: drawn dashed, no points

  void add(double at, double value) {
    x.push_back(at);
    y.push_back(value);
  }
};

struct Plot {
  Plot(std::string name_, std::string title_, std::string x_title_, std::string y_title_, Scale x_scale_,
       Scale y_scale_)
      : name(std::move(name_)), title(std::move(title_)), x_title(std::move(x_title_)), y_title(std::move(y_title_)),
        x_scale(x_scale_), y_scale(y_scale_) {}

  std::string name;  // file stem, e.g. allreduce-busbw-np4
  std::string title;
  std::string x_title, y_title;
  Scale x_scale = Scale::linear, y_scale = Scale::linear;
  bool points_only = false;  // scattered points (one per compressor), not lines
  // A category axis: x = 1, 2, ... stand for these names (sb-micro's kernels), which label the
  // tics and the summary's rows.
  std::vector<std::string> x_categories;
  bool y_from_zero = true;   // linear y axes start at 0, unless small differences are the point
  std::vector<Series> series;
};

struct ReportOptions {
  std::string by;          // --by KEY: lines also split by this label's value
  uint64_t size_bytes = 0;  // --size: the message size of the allreduce scaling plots; 0: the largest common one
};

// A line's title: the thing it shows, plus "KEY=value" when --by is given, and "(predicted)" for
// a simulated run (sb-dryrun), so predicted and measured lines are told apart and never merged.
std::string line_title(const std::string& what, const Run& run, const ReportOptions& options);

// "1 rank", "4 ranks".
std::string ranks_text(int64_t ranks);

// Every plot the campaign's runs allow, in a stable order: allreduce, compression, buckets,
// training, scaling across rank counts, sb-dryrun validate's predicted-vs-measured scatter, then
// sb-micro's kernel rates.
std::vector<Plot> allreduce_plots(const std::vector<Run>& runs, const ReportOptions& options);
std::vector<Plot> compress_plots(const std::vector<Run>& runs, const ReportOptions& options);
std::vector<Plot> buckets_plots(const std::vector<Run>& runs, const ReportOptions& options);
std::vector<Plot> train_plots(const std::vector<Run>& runs, const ReportOptions& options);
std::vector<Plot> scaling_plots(const std::vector<Run>& runs, const ReportOptions& options);
std::vector<Plot> validate_plots(const std::vector<Run>& runs, const ReportOptions& options);
std::vector<Plot> micro_plots(const std::vector<Run>& runs, const ReportOptions& options);
std::vector<Plot> build_plots(const std::vector<Run>& runs, const ReportOptions& options);

// Moves each run whose file reads whole but lacks what its plots need (a dataset renamed, gone or
// shorter than its sizes) to the campaign's skipped files, with the reason, as an unreadable file
// is, rather than letting it end the report halfway. Building a run's plots alone reads everything
// its plots read. Throws UsageError when no run is left.
void skip_unplottable_runs(Campaign& campaign, const ReportOptions& options);

}  // namespace sb::report
