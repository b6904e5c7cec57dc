// Speedup and efficiency against rank count, from runs of one kind at several scales, with the
// ideal line. Every measure is first made a rate (higher is better), so one definition serves:
//   speedup(p) = rate(p) / rate(p0),  ideal = p / p0,  efficiency = speedup / ideal,
// where p0 is the line's smallest rank count and repeated runs at one scale give their median.
//   allreduce at one message size: rate = p x busbw, the bus bytes all ranks move per second
//     (busbw is 0 at one rank by definition, so allreduce lines start at two ranks);
//   training throughput: rate = images/s; time to accuracy: rate = 1 / time_to_target_s;
//   bucketed training steps (sb-buckets, sb-dryrun train): rate = ranks / step time.
// Training is strong scaling when every run of a line has the same global batch, weak when the
// per-rank batch is the same; a `scaling` label on the runs overrides that inference. Beside
// training's rates, its memory: each scale's peak host memory per rank, and on GPUs its peak GPU
// memory (the largest rank's, the median over repeated runs), as they are, no rate.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "common/stats.hpp"
#include "common/sizes.hpp"
#include "results/report/plot.hpp"

namespace sb::report {
namespace {

using RatesByRanks = std::map<int64_t, std::vector<double>>;

struct ScalingPlots {
  Plot speedup, efficiency;
  int64_t smallest = 0, largest = 0;

  ScalingPlots(const std::string& name, const std::string& what)
      : speedup{"scaling-" + name + "-speedup", "Speedup: " + what, "ranks", "speedup over the smallest scale",
                Scale::log2, Scale::log2},
        efficiency{"scaling-" + name + "-efficiency", "Efficiency: " + what, "ranks", "efficiency (speedup / ideal)",
                   Scale::log2, Scale::linear} {}

  void add_line(const std::string& title, const RatesByRanks& rates) {
    if (rates.size() < 2) return;  // one scale: nothing to compare
    const int64_t p0 = rates.begin()->first;
    const double rate0 = percentile(rates.begin()->second, 50);
    if (rate0 <= 0) return;
    Series s{title}, e{title};
    for (const auto& [p, samples] : rates) {
      const double speedup = percentile(samples, 50) / rate0;
      s.add(static_cast<double>(p), speedup);
      e.add(static_cast<double>(p), speedup / (static_cast<double>(p) / static_cast<double>(p0)));
    }
    smallest = smallest == 0 ? p0 : std::min(smallest, p0);
    largest = std::max(largest, rates.rbegin()->first);
    speedup.series.push_back(std::move(s));
    efficiency.series.push_back(std::move(e));
  }

  void finish(std::vector<Plot>& plots) {
    if (speedup.series.empty()) return;
    Series ideal{"ideal"}, flat{"ideal"};
    ideal.reference = flat.reference = true;
    for (int64_t p = smallest; p <= largest; p *= 2) {
      ideal.add(static_cast<double>(p), static_cast<double>(p) / static_cast<double>(smallest));
      flat.add(static_cast<double>(p), 1.0);
    }
    if (ideal.x.back() != static_cast<double>(largest)) {
      ideal.add(static_cast<double>(largest), static_cast<double>(largest) / static_cast<double>(smallest));
      flat.add(static_cast<double>(largest), 1.0);
    }
    speedup.series.push_back(std::move(ideal));
    efficiency.series.push_back(std::move(flat));
    plots.push_back(std::move(speedup));
    plots.push_back(std::move(efficiency));
  }
};

std::set<double> run_sizes(const Run& run) {
  std::set<double> sizes;
  const h5::Node sweep = run.root->open_group("allreduce");
  for (const std::string& impl : sweep.children())
    for (double size : sweep.open_group(impl).read_doubles("size_bytes")) sizes.insert(size);
  return sizes;
}

void allreduce_scaling(const std::vector<Run>& runs, const ReportOptions& options, std::vector<Plot>& plots) {
  std::vector<const Run*> sweeps;
  for (const Run& run : runs)
    if (run.program == "sb-allreduce" && run.ranks >= 2 && run.root->has("allreduce")) sweeps.push_back(&run);
  if (sweeps.empty()) return;
  double size = static_cast<double>(options.size_bytes);
  if (size == 0) {  // the largest size every run measured
    std::set<double> common = run_sizes(*sweeps.front());
    for (const Run* run : sweeps) {
      std::set<double> mine = run_sizes(*run), both;
      std::set_intersection(common.begin(), common.end(), mine.begin(), mine.end(), std::inserter(both, both.end()));
      common = std::move(both);
    }
    if (common.empty()) return;
    size = *common.rbegin();
  }
  std::map<std::string, RatesByRanks> lines;
  for (const Run* run : sweeps) {
    const h5::Node sweep = run->root->open_group("allreduce");
    for (const std::string& impl : sweep.children()) {
      const h5::Node node = sweep.open_group(impl);
      const std::vector<double> sizes = node.read_doubles("size_bytes");
      const std::vector<double> busbw = node.open_group("out_of_place").read_doubles("busbw_GBps");
      for (size_t i = 0; i < sizes.size() && i < busbw.size(); ++i)
        if (sizes[i] == size) lines[line_title(impl, *run, options)][run->ranks].push_back(run->ranks * busbw[i]);
    }
  }
  ScalingPlots scaling("allreduce", "allreduce of " + format_size(static_cast<uint64_t>(size)) + "B per rank (rate: ranks x busbw)");
  for (const auto& [title, rates] : lines) scaling.add_line(title, rates);
  scaling.finish(plots);
}

std::string train_line(const Run& run, const ReportOptions& options) {
  const h5::Node train = run.root->open_group("train");
  const h5::Node config = train.open_group("config");
  // Appended piece by piece: GCC 12 warns (-Wrestrict, falsely) on `"text" + std::string&&` here.
  std::string what = config.attr_string("model");
  for (const std::string& part : {train.attr_string("dataset"), std::to_string(train.attr_int("image_size")) + "px",
                                  config.has_attr("algo") ? config.attr_string("algo") : std::string()})
    if (!part.empty()) what.append(" ").append(part);
  return line_title(what, run, options);
}

// "strong", "weak" or "mixed" for the runs of one line, unless their `scaling` label says.
std::string scaling_kind(const std::vector<const Run*>& line) {
  std::set<std::string> labelled;
  std::set<int64_t> global, per_rank;
  for (const Run* run : line) {
    labelled.insert(run->label("scaling"));
    const int64_t batch = run->root->open_group("train/config").attr_int("batch");
    global.insert(batch);
    per_rank.insert(batch / std::max<int64_t>(run->ranks, 1));
  }
  if (labelled.size() == 1 && !labelled.begin()->empty()) return *labelled.begin();
  if (global.size() == 1) return "strong, global batch " + std::to_string(*global.begin());
  if (per_rank.size() == 1) return "weak, batch " + std::to_string(*per_rank.begin()) + " per rank";
  return "mixed batches";
}

void train_scaling(const std::vector<Run>& runs, const ReportOptions& options, std::vector<Plot>& plots) {
  std::map<std::string, std::vector<const Run*>> lines;
  for (const Run& run : runs)
    if (run.program == "sb-train" && run.root->has("train/config")) lines[train_line(run, options)].push_back(&run);
  ScalingPlots throughput("train-throughput", "training throughput (images/s)");
  ScalingPlots tta("train-tta", "time to target accuracy");
  Plot memory{"scaling-train-memory", "Peak host memory per rank (max RSS, the largest rank's)", "ranks", "GB",
              Scale::log2, Scale::linear};
  Plot gpu_memory{"scaling-train-gpu-memory", "Peak GPU memory in use per rank (the largest rank's)", "ranks", "GB",
                  Scale::log2, Scale::linear};
  for (const auto& [title, line] : lines) {
    RatesByRanks images, reached, peak_gb, gpu_peak_gb;
    for (const Run* run : line) {
      const h5::Node train = run->root->open_group("train");
      // Complete files from schema 16 on (host) and 17 on, GPU runs (device).
      for (auto [name, by_ranks] :
           {std::pair{"rank_peak_host_bytes", &peak_gb}, {"rank_peak_device_bytes", &gpu_peak_gb}}) {
        if (!train.has(name)) continue;
        const std::vector<int64_t> peaks = train.read_ints(name);
        if (!peaks.empty())
          (*by_ranks)[run->ranks].push_back(static_cast<double>(*std::max_element(peaks.begin(), peaks.end())) / 1e9);
      }
      // A run ended early before its second step measured no rate (its first is left out).
      if (train.attr_double("images_per_s") > 0) images[run->ranks].push_back(train.attr_double("images_per_s"));
      if (train.attr_int("reached_target") == 1 && train.attr_double("time_to_target_s") > 0)
        reached[run->ranks].push_back(1.0 / train.attr_double("time_to_target_s"));
    }
    const std::string full = title + " (" + scaling_kind(line) + ")";
    throughput.add_line(full, images);
    tta.add_line(full, reached);
    for (auto [peaks, plot] : {std::pair{&peak_gb, &memory}, {&gpu_peak_gb, &gpu_memory}}) {
      if (peaks->size() < 2) continue;  // one scale: nothing to compare, as for the rates
      Series s{full};
      for (const auto& [p, samples] : *peaks) s.add(static_cast<double>(p), percentile(samples, 50));
      plot->series.push_back(std::move(s));
    }
  }
  throughput.finish(plots);
  tta.finish(plots);
  for (Plot* plot : {&memory, &gpu_memory})
    if (!plot->series.empty()) plots.push_back(std::move(*plot));
}

// Bucketed training steps (sb-buckets, and sb-dryrun train's predictions): the best strategy and
// bucket size at each scale; rate = ranks / (forward + backward-to-averaged), the steps of all
// ranks per second at a fixed per-rank batch (weak scaling).
void buckets_scaling(const std::vector<Run>& runs, const ReportOptions& options, std::vector<Plot>& plots) {
  std::map<std::string, RatesByRanks> lines;
  for (const Run& run : runs) {
    if (run.program != "sb-buckets" || !run.root->has("buckets")) continue;
    const h5::Node buckets = run.root->open_group("buckets");
    double best = 0;
    for (const std::string& group : buckets.children()) {
      if (group.rfind("tensor_", 0) == 0) continue;
      for (double t : buckets.open_group(group).read_doubles("iteration_s"))
        if (t > 0 && (best == 0 || t < best)) best = t;
    }
    if (best == 0) continue;
    // With jitter, the step's forward is the slowest rank's too (sim/jitter.hpp).
    const double slowest = buckets.has_attr("slowest_rank_factor") ? buckets.attr_double("slowest_rank_factor") : 1.0;
    const double forward = buckets.has_attr("forward_s") ? slowest * buckets.attr_double("forward_s") : 0.0;
    std::string what = buckets.attr_string("model") + " " + buckets.attr_string("algo") + "@" +
                       buckets.attr_string("transport");
    // Predictions with compute jitter or a straggler (sb-dryrun train --jitter, --straggler) are
    // their own lines, beside the same allreduce's without.
    for (const char* spread : {"jitter_cv", "straggler"})
      if (buckets.has_attr(spread)) {
        char text[48];
        std::snprintf(text, sizeof text, " %s %.3g", spread == std::string("jitter_cv") ? "jitter" : "straggler",
                      buckets.attr_double(spread));
        what += text;
      }
    if (buckets.has_attr("balanced")) what += " balanced";
    lines[line_title(what, run, options)][run.ranks].push_back(static_cast<double>(run.ranks) / (forward + best));
  }
  ScalingPlots scaling("buckets-step", "training step, best bucketing (rate: ranks / step time, fixed batch per rank)");
  for (const auto& [title, rates] : lines) scaling.add_line(title, rates);
  scaling.finish(plots);
}

}  // namespace

std::vector<Plot> scaling_plots(const std::vector<Run>& runs, const ReportOptions& options) {
  std::vector<Plot> plots;
  allreduce_scaling(runs, options, plots);
  train_scaling(runs, options, plots);
  buckets_scaling(runs, options, plots);
  return plots;
}

}  // namespace sb::report
