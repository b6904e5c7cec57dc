// Time-to-accuracy curves of sb-train runs: evaluation top-1 against wall-clock time since run_start
// (a resumed run's lost time included: its curve's clock_s; files before schema 10 have only the
// run time, wall_s) and against epoch, and the training loss per epoch, one line per run, the
// target as a reference.
#include <cmath>

#include "results/report/plot.hpp"

namespace sb::report {

std::vector<Plot> train_plots(const std::vector<Run>& runs, const ReportOptions& options) {
  Plot by_time{"train-top1-vs-time", "Time to accuracy: top-1 vs wall-clock time from run_start",
               "wall-clock time (s), what resumes lost included", "top-1 accuracy", Scale::linear, Scale::linear};
  Plot by_epoch{"train-top1-vs-epoch", "Top-1 vs epoch", "epoch", "top-1 accuracy", Scale::linear, Scale::linear};
  Plot loss{"train-loss-vs-epoch", "Training loss vs epoch", "epoch", "mean training loss", Scale::linear,
            Scale::log10};
  double target = 0, last_time = 0, last_epoch = 0;
  for (const Run& run : runs) {
    if (run.program != "sb-train" || !run.root->has("train/curve")) continue;
    const h5::Node train = run.root->open_group("train");
    const h5::Node curve = train.open_group("curve");
    const std::vector<double> epoch = curve.read_doubles("epoch"),
                              clock = curve.read_doubles(curve.has("clock_s") ? "clock_s" : "wall_s"),
                              top1 = curve.read_doubles("top1"), train_loss = curve.read_doubles("train_loss");
    const std::string title = line_title(run.name + " (" + ranks_text(run.ranks) + ")", run, options);
    // On the time axis a resumed run's line has the failures' delays in it: said in its title.
    const int64_t resumes = train.has_attr("resumes") ? train.attr_int("resumes") : 0;
    Series t{resumes > 0 ? title + ", resumed " + std::to_string(resumes) + "x" : title}, e{title}, l{title};
    for (size_t i = 0; i < epoch.size(); ++i) {
      if (!std::isnan(top1.at(i))) {
        if (!std::isnan(clock.at(i))) t.add(clock[i], top1[i]);
        e.add(epoch[i], top1[i]);
      }
      l.add(epoch[i], train_loss.at(i));
      if (!std::isnan(clock[i])) last_time = std::max(last_time, clock[i]);
      last_epoch = std::max(last_epoch, epoch[i]);
    }
    const h5::Node config = train.open_group("config");
    if (config.has_attr("target_accuracy")) target = std::max(target, config.attr_double("target_accuracy"));
    if (!t.x.empty()) by_time.series.push_back(std::move(t));
    if (!e.x.empty()) by_epoch.series.push_back(std::move(e));
    if (!l.x.empty()) loss.series.push_back(std::move(l));
  }
  std::vector<Plot> plots;
  for (auto [plot, end] : {std::pair{&by_time, last_time}, std::pair{&by_epoch, last_epoch}}) {
    if (plot->series.empty()) continue;
    if (target > 0) {
      Series line{"target " + std::to_string(target).substr(0, 5)};
      line.reference = true;
      line.add(0, target);
      line.add(end, target);
      plot->series.push_back(std::move(line));
    }
    plots.push_back(std::move(*plot));
  }
  if (!loss.series.empty()) plots.push_back(std::move(loss));
  return plots;
}

}  // namespace sb::report
