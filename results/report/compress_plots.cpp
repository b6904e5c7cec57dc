// Compression trade-offs of sb-compress runs: at one gradient size, each compressor is a point of
// compression ratio against kernel throughput, against the error of one compression, and against
// the speedup of its compressed allreduce over MPI_Allreduce in the same run.
#include <algorithm>

#include "common/sizes.hpp"
#include "results/report/plot.hpp"

namespace sb::report {
namespace {

struct Metric {
  const char* dataset;
  const char* name;
  const char* y_title;
  Scale y_scale;
};

constexpr Metric kMetrics[] = {
    {"compress_GBps", "throughput", "compression kernel (GB/s of fp32 input)", Scale::log10},
    {"rel_error", "error", "relative error |g - D(C(g))| / |g|", Scale::linear},
    {"speedup", "speedup", "allreduce speedup over MPI_Allreduce (same run)", Scale::linear},
};

}  // namespace

std::vector<Plot> compress_plots(const std::vector<Run>& runs, const ReportOptions& options) {
  std::vector<Plot> plots;
  for (const Run& run : runs) {
    if (run.program != "sb-compress" || !run.root->has("compress")) continue;
    const h5::Node compress = run.root->open_group("compress");
    const std::string where = ranks_text(run.ranks) + ", " + run.name;
    for (const Metric& metric : kMetrics) {
      Plot plot{"compress-" + std::string(metric.name) + "-np" + std::to_string(run.ranks), "", "compression ratio (x)",
                metric.y_title, Scale::log2, metric.y_scale};
      plot.points_only = true;
      Series points{line_title("compressors", run, options)};
      double shown_size = 0;
      for (const std::string& compressor : compress.children()) {
        const h5::Node node = compress.open_group(compressor);
        const std::vector<double> sizes = node.read_doubles("size_bytes");
        if (sizes.empty()) continue;
        // --size when the run has it, else its largest gradient.
        size_t row = sizes.size() - 1;
        auto wanted = std::find(sizes.begin(), sizes.end(), static_cast<double>(options.size_bytes));
        if (options.size_bytes && wanted != sizes.end()) row = static_cast<size_t>(wanted - sizes.begin());
        shown_size = sizes[row];
        points.add(node.read_doubles("compression_ratio").at(row), node.read_doubles(metric.dataset).at(row));
        points.point_labels.push_back(compressor);
      }
      if (points.x.empty()) continue;
      plot.title = "Compression " + std::string(metric.name) + " vs ratio, " + format_size(static_cast<uint64_t>(shown_size)) +
                   "B gradient, " + where;
      plot.series.push_back(std::move(points));
      plots.push_back(std::move(plot));
    }
  }
  return plots;
}

}  // namespace sb::report
