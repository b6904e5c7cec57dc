#include "results/report/plot.hpp"

#include <set>

#include "common/check.hpp"
#include "common/usage_error.hpp"

namespace sb::report {

std::string line_title(const std::string& what, const Run& run, const ReportOptions& options) {
  std::string title = what;
  if (!options.by.empty()) {
    const std::string value = run.label(options.by);
    title += " " + options.by + "=" + (value.empty() ? "(none)" : value);
  }
  if (run.simulated) title += " (predicted)";
  return title;
}

std::string ranks_text(int64_t ranks) { return std::to_string(ranks) + (ranks == 1 ? " rank" : " ranks"); }

std::vector<Plot> build_plots(const std::vector<Run>& runs, const ReportOptions& options) {
  std::vector<Plot> plots;
  for (auto builder :
       {allreduce_plots, compress_plots, buckets_plots, train_plots, scaling_plots, validate_plots, micro_plots})
    for (Plot& plot : builder(runs, options)) plots.push_back(std::move(plot));
  // Two runs of one program at one scale would give two plots one name: number the later ones.
  std::set<std::string> taken;
  for (Plot& plot : plots) {
    const std::string base = plot.name;
    for (int copy = 2; taken.count(plot.name); ++copy) plot.name = base + "-" + std::to_string(copy);
    taken.insert(plot.name);
  }
  return plots;
}

void skip_unplottable_runs(Campaign& campaign, const ReportOptions& options) {
  std::vector<Run> usable;
  for (Run& run : campaign.runs) {
    try {
      build_plots({run}, options);
      usable.push_back(std::move(run));
    } catch (const UsageError&) {
      throw;  // about the command line, not the run
    } catch (const std::exception& e) {  // a dataset missing (LibraryError) or shorter than its sizes (.at())
      campaign.skipped.push_back({run.source, std::string("not what its program writes: ") + e.what()});
    }
  }
  if (usable.empty())
    throw UsageError("no usable run: " + campaign.skipped.back().path + ": " + campaign.skipped.back().reason);
  campaign.runs = std::move(usable);
}

}  // namespace sb::report
