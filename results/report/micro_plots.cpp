// Kernel rates of sb-micro runs, every run a series over one category axis of kernels (a
// benchmark at a size: memcpy/262144, topk/16777216/10), numbered in the order the campaign first
// ran them, so that one kernel lines up across runs (machines, or --by labels). Two plots: the
// traffic rate, and that rate over memcpy's on the same traffic in the same process, the in-run
// ceiling, which compares machines without their memory systems in the way.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "results/report/plot.hpp"

namespace sb::report {
namespace {

constexpr const char* kAggregates[] = {"_mean", "_median", "_stddev", "_cv"};

// The kernel of a row's name: "BM_memcpy/262144/real_time_median" -> "memcpy/262144", with the
// aggregate it is ("_median"), or "" for a repetition of its own.
std::string kernel_of(std::string name, std::string& aggregate) {
  aggregate.clear();
  for (const char* suffix : kAggregates) {
    const std::string s = suffix;
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      aggregate = s;
      name.erase(name.size() - s.size());
    }
  }
  for (const std::string timing : {"/real_time", "/manual_time"})
    if (name.size() > timing.size() && name.compare(name.size() - timing.size(), timing.size(), timing) == 0)
      name.erase(name.size() - timing.size());
  if (name.rfind("BM_", 0) == 0) name.erase(0, 3);
  return name;
}

// A run's value per kernel of one dataset, the kernels in the order the run measured them: the
// median aggregate where the run has one, else the median of its repetitions. Rows that did not
// run (an error) or lack the value (NaN, or a negative rate: none set) are left out.
std::vector<std::pair<std::string, double>> values_by_kernel(const h5::Node& micro, const std::string& dataset) {
  const std::vector<std::string> names = micro.attr_strings("name"), errors = micro.attr_strings("error");
  const std::vector<double> values = micro.read_doubles(dataset);
  std::vector<std::string> order;  // each kernel once, as first met
  std::set<std::string> met;
  std::map<std::string, std::vector<double>> repetitions;
  std::map<std::string, double> medians;
  for (size_t i = 0; i < names.size() && i < values.size(); ++i) {
    if (!errors.at(i).empty() || !std::isfinite(values[i]) || values[i] < 0) continue;
    std::string aggregate;
    const std::string kernel = kernel_of(names[i], aggregate);
    if (met.insert(kernel).second) order.push_back(kernel);
    if (aggregate == "_median") medians[kernel] = values[i];
    else if (aggregate.empty()) repetitions[kernel].push_back(values[i]);
  }
  std::vector<std::pair<std::string, double>> by_kernel;
  for (const std::string& kernel : order) {
    if (const auto median = medians.find(kernel); median != medians.end()) {
      by_kernel.emplace_back(kernel, median->second);
    } else if (std::vector<double>& seen = repetitions[kernel]; !seen.empty()) {
      std::sort(seen.begin(), seen.end());
      by_kernel.emplace_back(kernel, seen[seen.size() / 2]);
    }
  }
  return by_kernel;
}

struct Metric {
  const char* dataset;
  const char* name;
  const char* title;
  const char* y_title;
  Scale y_scale;
};

constexpr Metric kMetrics[] = {
    {"traffic_GBps", "traffic", "Kernel traffic rates (sb-micro)", "bytes read + written per second (GB/s)",
     Scale::log10},
    {"x_memcpy", "x-memcpy", "Kernel rate over memcpy's on the same traffic, same process (sb-micro)",
     "rate / memcpy's rate (x)", Scale::linear},
};

}  // namespace

std::vector<Plot> micro_plots(const std::vector<Run>& runs, const ReportOptions& options) {
  std::vector<const Run*> micro_runs;
  for (const Run& run : runs)
    if (run.program == "sb-micro" && run.root->has("micro")) micro_runs.push_back(&run);
  std::vector<Plot> plots;
  for (const Metric& metric : kMetrics) {
    Plot plot{"micro-" + std::string(metric.name), metric.title, "kernel", metric.y_title, Scale::linear,
              metric.y_scale};
    plot.points_only = true;
    std::map<std::string, size_t> position;  // kernel -> x, in the order first seen
    for (const Run* run : micro_runs) {
      const h5::Node micro = run->root->open_group("micro");
      if (!micro.has(metric.dataset)) continue;
      Series series{line_title(run->name, *run, options)};
      for (const auto& [kernel, value] : values_by_kernel(micro, metric.dataset)) {
        const auto [at, fresh] = position.try_emplace(kernel, plot.x_categories.size() + 1);
        if (fresh) plot.x_categories.push_back(kernel);
        series.add(static_cast<double>(at->second), value);
      }
      if (!series.x.empty()) plot.series.push_back(std::move(series));
    }
    if (!plot.series.empty()) plots.push_back(std::move(plot));
  }
  return plots;
}

}  // namespace sb::report
