// Bucket-size sweeps of measured sb-buckets runs: iteration time and exposed communication against
// bucket size, one line per strategy that sweeps sizes; per-tensor, no-overlap and fused have one
// value each and are drawn as horizontal references across the sweep.
#include <algorithm>

#include "results/buckets_record.hpp"
#include "results/report/plot.hpp"

namespace sb::report {

std::vector<Plot> buckets_plots(const std::vector<Run>& runs, const ReportOptions& options) {
  std::vector<Plot> plots;
  for (const Run& run : runs) {
    // Predicted steps (sb-dryrun train writes one file per scale) are drawn by the step-scaling
    // plot instead: a sweep plot for each would bury the measured ones.
    if (run.program != "sb-buckets" || !run.root->has("buckets") || run.simulated) continue;
    const h5::Node buckets = run.root->open_group("buckets");
    const std::string model = buckets.has_attr("model") ? buckets.attr_string("model") : "?";
    const std::string where = model + ", " + ranks_text(run.ranks) + ", " + run.name;
    const std::string np = "-np" + std::to_string(run.ranks);
    Plot iteration{"buckets-iteration" + np, "Bucket sweep: iteration time (" + where + ")", "bucket size (MiB)",
                   "backward start to gradients averaged (ms)", Scale::log2, Scale::linear};
    Plot exposed{"buckets-exposed" + np, "Bucket sweep: exposed communication (" + where + ")", "bucket size (MiB)",
                 "communication not hidden by backward (ms)", Scale::log2, Scale::linear};
    // The strategies differ by a few percent of the iteration: let the axis zoom on them.
    iteration.y_from_zero = exposed.y_from_zero = false;
    std::vector<std::string> single;  // groups with one row: references
    double smallest = 0, largest = 0;
    for (const std::string& strategy : buckets.children()) {
      if (strategy.rfind("tensor_", 0) == 0) continue;  // tensor_ready_s, tensor_elements: datasets, not strategies
      const h5::Node node = buckets.open_group(strategy);
      const std::vector<double> mb = node.read_doubles("bucket_mb");
      if (mb.empty()) continue;  // not written by sb-buckets; nothing to draw
      if (mb.size() == 1) {
        single.push_back(strategy);
        continue;
      }
      const std::vector<double> it = node.read_doubles("iteration_s"), ex = node.read_doubles("exposed_s");
      // A cycle sweep is titled with its cycle time: "cycle (5 ms cycles)".
      const double cycle_ms = node.has_attr("cycle_ms") ? node.attr_double("cycle_ms") : 0;
      Series a{line_title(sweep_title(strategy, cycle_ms), run, options)}, b{a.title};
      for (size_t i = 0; i < mb.size(); ++i) {
        a.add(mb[i], it.at(i) * 1e3);
        b.add(mb[i], ex.at(i) * 1e3);
      }
      smallest = smallest == 0 ? mb.front() : std::min(smallest, mb.front());
      largest = std::max(largest, mb.back());
      iteration.series.push_back(std::move(a));
      exposed.series.push_back(std::move(b));
    }
    if (largest == 0) continue;  // no sweep in this run: nothing to draw against
    for (const std::string& strategy : single) {
      const h5::Node node = buckets.open_group(strategy);
      for (auto [plot, dataset] : {std::pair{&iteration, "iteration_s"}, std::pair{&exposed, "exposed_s"}}) {
        Series line{line_title(strategy, run, options)};
        line.reference = true;
        line.add(smallest, node.read_doubles(dataset).at(0) * 1e3);
        line.add(largest, line.y.back());
        plot->series.push_back(std::move(line));
      }
    }
    plots.push_back(std::move(iteration));
    plots.push_back(std::move(exposed));
  }
  return plots;
}

}  // namespace sb::report
