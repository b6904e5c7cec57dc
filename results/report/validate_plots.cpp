// sb-dryrun validate's comparisons: every re-predicted row as a point of measured against
// predicted time (log-log), one series per kind of row (each allreduce implementation at each
// rank count, each bucket strategy), with the y = x line and the +-25% band as references, and
// the median error in the title. A comparison with --reference (each row measured again) is
// titled and labelled as the noise floor it is.
#include <algorithm>
#include <cmath>
#include <map>

#include "common/stats.hpp"
#include "results/report/plot.hpp"

namespace sb::report {

std::vector<Plot> validate_plots(const std::vector<Run>& runs, const ReportOptions& options) {
  std::vector<Plot> plots;
  for (const Run& run : runs) {
    if (run.program != "sb-dryrun validate" || !run.root->has("validate")) continue;
    const h5::Node validate = run.root->open_group("validate");
    const std::vector<std::string> what = validate.attr_strings("implementation");
    const std::vector<double> measured = validate.read_doubles("measured_s"), predicted = validate.read_doubles("predicted_s");
    const std::vector<double> errors = validate.read_doubles("rel_error");
    const std::vector<int64_t> ranks = validate.read_ints("ranks");
    std::map<std::string, Series> by_kind;
    std::vector<double> magnitudes;
    double low = 0, high = 0;
    for (size_t i = 0; i < what.size() && i < measured.size() && i < predicted.size(); ++i) {
      if (!(measured[i] > 0) || !(predicted[i] > 0)) continue;
      const std::string kind = what[i] + " " + ranks_text(i < ranks.size() ? ranks[i] : 0);
      by_kind.try_emplace(kind, line_title(kind, run, options)).first->second.add(measured[i] * 1e6, predicted[i] * 1e6);
      if (i < errors.size()) magnitudes.push_back(std::fabs(errors[i]));
      low = low == 0 ? std::min(measured[i], predicted[i]) : std::min({low, measured[i], predicted[i]});
      high = std::max({high, measured[i], predicted[i]});
    }
    if (by_kind.empty()) continue;
    // With --reference the "predictions" are the same rows measured again: the noise floor.
    const bool again = validate.has_attr("reference");
    char title[160];
    if (again)
      std::snprintf(title, sizeof title, "Measured again vs measured (%s): median |difference| %.1f%%, %zu rows",
                    run.name.c_str(), 100 * percentile(magnitudes, 50), magnitudes.size());
    else
      std::snprintf(title, sizeof title, "Predicted vs measured on %s (%s): median |error| %.1f%%, %zu rows",
                    validate.attr_string("machine_name").c_str(), run.name.c_str(), 100 * percentile(magnitudes, 50),
                    magnitudes.size());
    Plot plot{"validate-" + run.name, title, "measured (us)", again ? "measured again (us)" : "predicted (us)",
              Scale::log10, Scale::log10};
    plot.points_only = true;
    for (auto& [kind, series] : by_kind) plot.series.push_back(std::move(series));
    const char* diagonal = again ? "again = measured" : "predicted = measured";
    for (const auto& [name, factor] : {std::pair{diagonal, 1.0}, {"+25%", 1.25}, {"-25%", 0.75}}) {
      Series line{name};
      line.reference = true;
      line.add(low * 1e6, low * 1e6 * factor);
      line.add(high * 1e6, high * 1e6 * factor);
      plot.series.push_back(std::move(line));
    }
    plots.push_back(std::move(plot));
  }
  return plots;
}

}  // namespace sb::report
