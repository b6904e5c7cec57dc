// Allreduce size sweeps: busbw and latency against message size, one plot per rank count, one line
// per implementation (and --by label), with the host memcpy bandwidth the run measured as the
// ceiling of host-buffer implementations.
#include <map>

#include "results/report/plot.hpp"

namespace sb::report {

std::vector<Plot> allreduce_plots(const std::vector<Run>& runs, const ReportOptions& options) {
  std::map<int64_t, std::vector<const Run*>> by_ranks;
  for (const Run& run : runs)
    if (run.program == "sb-allreduce" && run.root->has("allreduce")) by_ranks[run.ranks].push_back(&run);

  std::vector<Plot> plots;
  for (const auto& [ranks, group] : by_ranks) {
    const std::string np = "np" + std::to_string(ranks);
    Plot busbw{"allreduce-busbw-" + np, "Allreduce bus bandwidth, " + ranks_text(ranks) + " (out of place)",
               "message size (bytes)", "busbw (GB/s)", Scale::bytes, Scale::log10};
    Plot latency{"allreduce-latency-" + np, "Allreduce latency, " + ranks_text(ranks) + " (out of place)",
                 "message size (bytes)", "time (us)", Scale::bytes, Scale::log10};
    for (const Run* run : group) {
      // Several runs at one scale without --by to tell them apart: name the run in the line.
      const std::string suffix = group.size() > 1 && options.by.empty() ? " (" + run->name + ")" : "";
      const h5::Node sweep = run->root->open_group("allreduce");
      double smallest = 0, largest = 0;
      for (const std::string& impl : sweep.children()) {
        const h5::Node node = sweep.open_group(impl);
        const std::vector<double> sizes = node.read_doubles("size_bytes");
        const h5::Node out_of_place = node.open_group("out_of_place");
        const std::vector<double> bw = out_of_place.read_doubles("busbw_GBps");
        const std::vector<double> time = out_of_place.read_doubles("time_us");
        Series b{line_title(impl, *run, options) + suffix}, t{b.title};
        for (size_t i = 0; i < sizes.size() && i < bw.size() && i < time.size(); ++i) {
          if (bw[i] > 0) b.add(sizes[i], bw[i]);  // 1 rank: busbw is 0 by definition
          t.add(sizes[i], time[i]);
        }
        if (!sizes.empty()) {
          smallest = smallest == 0 ? sizes.front() : std::min(smallest, sizes.front());
          largest = std::max(largest, sizes.back());
        }
        if (!b.x.empty()) busbw.series.push_back(std::move(b));
        latency.series.push_back(std::move(t));
      }
      if (sweep.has_attr("memcpy_GBps") && sweep.attr_double("memcpy_GBps") > 0 && largest > 0 && !busbw.series.empty()) {
        Series ceiling{line_title("memcpy (host ceiling)", *run, options) + suffix};
        ceiling.reference = true;
        ceiling.add(smallest, sweep.attr_double("memcpy_GBps"));
        ceiling.add(largest, sweep.attr_double("memcpy_GBps"));
        busbw.series.push_back(std::move(ceiling));
      }
    }
    if (!busbw.series.empty()) plots.push_back(std::move(busbw));
    if (!latency.series.empty()) plots.push_back(std::move(latency));
  }
  return plots;
}

}  // namespace sb::report
