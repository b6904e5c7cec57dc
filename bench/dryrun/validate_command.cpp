// sb-dryrun validate: every measured sb-allreduce row and sb-buckets row of a campaign predicted
// again on a machine description, with the run's own settings (ranks, schedule, transport, type,
// segment, node size, torus grid; the bucket run's profile, strategy and sizes), and the relative
// error of each: predicted / measured - 1. A table per run and implementation, the campaign's
// median and worst, and a results file of every case (/validate, results/SCHEMA.md).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>

#include "bench/dryrun/commands.hpp"
#include "bench/dryrun/simulated_run.hpp"
#include "collectives/algorithms/algorithms.hpp"
#include "common/check.hpp"
#include "common/stats.hpp"
#include "common/usage_error.hpp"
#include "kernels/dtype.hpp"
#include "results/campaign.hpp"
#include "results/results_file.hpp"
#include "sim/jitter.hpp"
#include "sim/step_model.hpp"

namespace sb {
namespace {

struct Case {
  std::string run, what;  // run name; implementation (allreduce) or strategy (buckets)
  int64_t ranks = 0;
  double size = 0;        // bytes (allreduce) or bucket MiB (buckets)
  double measured_s = 0, predicted_s = 0;
  std::string run_id;     // the run's run_id (empty before schema 12)
  double error() const { return predicted_s / measured_s - 1; }
};

// A measured run is re-predicted from its own figures (ranks, counts, segment, tensor sizes), so a
// figure that its program never writes (a damaged or hand-edited file) is refused, naming the run,
// before the simulator is asked to run, say, 2^63 elements through one-byte segments.
struct ImplausibleRun : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void require_plausible(bool plausible, const std::string& what) {
  if (!plausible) throw ImplausibleRun(what);
}

// The flags' parsers read the file's words too (datatype, torus, transport, strategy); a word
// they refuse is then the file's fault, not the command line's.
template <class Parse>
auto parsed_from_file(Parse parse) {
  try {
    return parse();
  } catch (const UsageError& e) {
    throw ImplausibleRun(e.what());
  }
}

constexpr double kMostElements = 1ull << 40;  // 4 TiB of fp32: beyond any gradient or message measured

int plausible_ranks(const Run& run) {
  require_plausible(run.ranks >= 1 && run.ranks <= (1 << 20),
                    "ranks " + std::to_string(run.ranks) + " is not a rank count from 1 to 1048576");
  return static_cast<int>(run.ranks);
}

void validate_allreduce(const Run& run, const sim::Machine& machine, std::vector<Case>& cases) {
  const h5::Node sweep = run.root->open_group("allreduce");
  const DataType type = parsed_from_file([&] { return parse_datatype(sweep.attr_string("datatype")); });
  const int64_t segment_bytes = sweep.attr_int("segment_bytes");
  require_plausible(segment_bytes >= static_cast<int64_t>(size_of(type)),
                    "segment_bytes " + std::to_string(segment_bytes) + " is smaller than one element");
  const TorusShape torus = parsed_from_file([&] { return parse_torus(sweep.attr_string("torus")); });
  const int nranks = plausible_ranks(run);
  for (const std::string& impl : sweep.children()) {
    const h5::Node node = sweep.open_group(impl);
    const std::string transport = node.attr_string("transport");
    sim::AllreduceCase c;
    c.impl = node.attr_string("implementation");
    if (transport != "library") c.transport = parsed_from_file([&] { return parse_transports(transport).front(); });
    c.nranks = nranks;
    c.type = type;
    c.segment_bytes = static_cast<size_t>(segment_bytes);
    c.node_size = static_cast<int>(sweep.attr_int("node_size"));
    c.torus_x = torus.x;
    c.torus_y = torus.y;
    if (!sim::is_known_allreduce(c.impl) || c.nranks < 2) continue;
    const std::vector<double> sizes = node.read_doubles("size_bytes");
    const std::vector<double> counts = node.read_doubles("count");
    // The median over iterations of the slowest rank's time: robust to the outliers of a shared
    // machine, and what the simulator's slowest finish predicts.
    const std::vector<double> measured = node.open_group("out_of_place").read_doubles("median_us");
    for (size_t i = 0; i < sizes.size() && i < measured.size(); ++i) {
      if (!(measured[i] > 0)) continue;
      require_plausible(i < counts.size() && counts[i] >= 0 && counts[i] <= kMostElements &&
                            counts[i] == std::floor(sizes[i] / static_cast<double>(size_of(type))),
                        impl + ": count and size_bytes disagree in row " + std::to_string(i + 1));
      c.count = static_cast<size_t>(counts[i]);
      cases.push_back({run.name, impl, run.ranks, sizes[i], measured[i] * 1e-6, sim::predict_allreduce(machine, c).time_s,
                       run.run_id});
    }
  }
}

void validate_buckets(const Run& run, const sim::Machine& machine, std::vector<Case>& cases) {
  const h5::Node buckets = run.root->open_group("buckets");
  if (!buckets.has("tensor_elements")) {
    std::fprintf(stderr, "sb-dryrun: %s: no tensor_elements (written before schema 6): not validated\n", run.source.c_str());
    return;
  }
  BackwardProfile profile;
  profile.backward_s = buckets.attr_double("backward_s");
  profile.ready_s = buckets.read_doubles("tensor_ready_s");
  require_plausible(std::isfinite(profile.backward_s) && profile.backward_s >= 0, "backward_s is not a time");
  for (double t : profile.ready_s) require_plausible(std::isfinite(t) && t >= 0, "a tensor_ready_s is not a time");
  double elements = 0;
  for (int64_t n : buckets.read_ints("tensor_elements")) {
    elements += static_cast<double>(n);
    require_plausible(n >= 1 && elements <= kMostElements, "tensor_elements are not gradient sizes");
    profile.tensors.push_back({"", static_cast<size_t>(n)});
  }
  require_plausible(profile.ready_s.size() == profile.tensors.size(), "tensor_ready_s and tensor_elements differ in length");
  sim::AllreduceCase c;
  c.impl = buckets.attr_string("algo");
  const std::string transport = buckets.attr_string("transport");
  if (transport != "library") c.transport = parsed_from_file([&] { return parse_transports(transport).front(); });
  c.nranks = plausible_ranks(run);
  if (!sim::is_known_allreduce(c.impl)) return;
  sim::StepModel model(machine, c);
  // A run replayed with --jitter is predicted with the same: each step at its slowest rank's pace.
  const double jitter = buckets.has_attr("jitter_cv") ? buckets.attr_double("jitter_cv") : 0.0;
  require_plausible(jitter >= 0 && jitter <= sim::kMostJitter, "jitter_cv is not a coefficient sb-buckets takes");
  const double straggler = buckets.has_attr("straggler") ? buckets.attr_double("straggler") : 1.0;
  require_plausible(straggler >= 1 && straggler <= sim::kMostStraggler, "straggler is not a factor sb-buckets takes");
  const sim::SlowestRankFactors slowest = sim::slowest_rank_factors(jitter, c.nranks, straggler);
  for (const std::string& group : buckets.children()) {
    if (group.rfind("tensor_", 0) == 0 || group.find('@') != std::string::npos) continue;  // datasets; polled sweeps
    const h5::Node node = buckets.open_group(group);
    // A cycle sweep (cycle, cycle-5ms) holds its cycle time; files before schema 20 have none.
    const bool cycles = node.has_attr("cycle_ms");
    const double cycle_ms = cycles ? node.attr_double("cycle_ms") : 0;
    if (cycles) require_plausible(cycle_ms >= 0.01 && cycle_ms <= 1000, group + ": cycle_ms is not a cycle time");
    const bool overlap = group != "no-overlap" && group != "fused";
    BucketStrategy strategy = BucketStrategy::cycle;
    if (group == "no-overlap") strategy = BucketStrategy::per_tensor;
    else if (group == "fused") strategy = BucketStrategy::fixed;
    else if (!cycles) strategy = parsed_from_file([&] { return parse_bucket_strategy(group); });
    const std::vector<double> mb = node.read_doubles("bucket_mb"), measured = node.read_doubles("iteration_s");
    for (size_t i = 0; i < mb.size() && i < measured.size(); ++i) {
      require_plausible(std::isfinite(mb[i]) && mb[i] >= 0, group + ": bucket_mb is not a bucket size");  // 0: per tensor
      // fused was planned as one bucket twice the gradients' size.
      const double planned_mb = group == "fused" ? 1e9 : mb[i];
      // Cycles too many to price are refused as a file sb-buckets could not have written.
      const sim::StepPrediction p = parsed_from_file([&] {
        return sim::expected_step(slowest, profile, [&](const BackwardProfile& slowed) {
          return sim::predict_swept_step(slowed, strategy, planned_mb, cycle_ms * 1e-3, model, overlap);
        });
      });
      cases.push_back({run.name, "buckets:" + group, run.ranks, mb[i], measured[i], p.iteration_s, run.run_id});
    }
  }
}

void skip(const Run& run, const char* why) {
  std::fprintf(stderr, "sb-dryrun: skipped %s: not what its program writes: %s\n", run.source.c_str(), why);
}

// Every measured row of the inputs with its prediction.
std::vector<Case> collect_cases(const std::vector<std::string>& inputs, const sim::Machine& machine,
                                const std::string& out) {
  const Campaign campaign = load_campaign(inputs);
  if (!out.empty()) refuse_writing_over_a_run(campaign, out, "--out");
  for (const SkippedFile& skipped : campaign.skipped)
    std::fprintf(stderr, "sb-dryrun: skipped %s: %s\n", skipped.path.c_str(), skipped.reason.c_str());
  std::vector<Case> cases;
  for (const Run& run : campaign.runs) {
    if (run.simulated) continue;
    // A run that lacks what its program writes (a dataset renamed or gone) is skipped and named.
    std::vector<Case> of_run;
    try {
      if (run.program == "sb-allreduce" && run.root->has("allreduce")) validate_allreduce(run, machine, of_run);
      if (run.program == "sb-buckets" && run.root->has("buckets")) validate_buckets(run, machine, of_run);
    } catch (const LibraryError& e) {  // a dataset gone
      skip(run, e.what());
      continue;
    } catch (const ImplausibleRun& e) {  // a figure its program never writes
      skip(run, e.what());
      continue;
    }
    cases.insert(cases.end(), of_run.begin(), of_run.end());
  }
  if (cases.empty()) throw UsageError("validate: no measured sb-allreduce or sb-buckets rows in the inputs");
  return cases;
}

// --reference: each row's "prediction" is the same row measured again in another campaign (the
// median if it holds several), so the table shows how far two measurements differ: the floor
// under any model's error on this machine. Rows without a match are dropped.
void replace_by_reference(std::vector<Case>& cases, const std::vector<Case>& reference) {
  // A run that is among the inputs too (its folder given to both) would match itself: a noise
  // floor of 0.0% that no second measurement showed.
  std::set<std::string> measured_runs;
  for (const Case& c : cases)
    if (!c.run_id.empty()) measured_runs.insert(c.run_id);
  for (const Case& c : reference)
    if (measured_runs.count(c.run_id))
      throw UsageError("--reference: run " + c.run + " is among the inputs too (the same run_id): the reference must be "
                       "the same rows measured again, in other runs");
  std::map<std::tuple<int64_t, std::string, double>, std::vector<double>> again;
  for (const Case& c : reference) again[{c.ranks, c.what, c.size}].push_back(c.measured_s);
  std::vector<Case> kept;
  for (Case c : cases) {
    const auto it = again.find({c.ranks, c.what, c.size});
    if (it == again.end()) continue;
    c.predicted_s = percentile(it->second, 50);
    kept.push_back(c);
  }
  if (kept.empty()) throw UsageError("--reference: no row of the inputs is measured there too");
  cases = std::move(kept);
}

}  // namespace

int validate_campaign(const DryrunOptions& o, const RunMetadata& metadata) {
  const sim::Machine machine = sim::read_machine(o.machine);
  std::vector<Case> cases = collect_cases(o.inputs, machine, o.out);
  if (!o.reference.empty()) replace_by_reference(cases, collect_cases(o.reference, machine, o.out));

  if (o.print_rows) {
    std::printf("%-34s %-22s %6s %12s %14s %14s %9s\n", "run", "implementation", "ranks", "size", "measured(us)",
                "predicted(us)", "error");
    for (const Case& c : cases)
      std::printf("%-34s %-22s %6lld %12.6g %14.2f %14.2f %+8.1f%%\n", c.run.c_str(), c.what.c_str(),
                  static_cast<long long>(c.ranks), c.size, c.measured_s * 1e6, c.predicted_s * 1e6, 100 * c.error());
  }
  if (o.reference.empty())
    std::printf("# sb-dryrun validate on %s (%s): predicted / measured - 1, by run and implementation\n",
                machine.name.c_str(), o.machine.c_str());
  else
    std::printf("# sb-dryrun validate --reference: measured again / measured - 1, by run and implementation\n");
  std::printf("%-34s %-22s %6s %6s %12s %12s %12s\n", "run", "implementation", "ranks", "rows", "median|err|",
              "max|err|", "mean err");
  std::vector<double> all;
  for (size_t first = 0; first < cases.size();) {
    size_t last = first;
    std::vector<double> errors;
    double signed_sum = 0;
    while (last < cases.size() && cases[last].run == cases[first].run && cases[last].what == cases[first].what) {
      errors.push_back(std::fabs(cases[last].error()));
      signed_sum += cases[last].error();
      all.push_back(errors.back());
      ++last;
    }
    std::printf("%-34s %-22s %6lld %6zu %11.1f%% %11.1f%% %+11.1f%%\n", cases[first].run.c_str(), cases[first].what.c_str(),
                static_cast<long long>(cases[first].ranks), errors.size(), 100 * percentile(errors, 50),
                100 * *std::max_element(errors.begin(), errors.end()), 100 * signed_sum / errors.size());
    first = last;
  }
  const size_t over = static_cast<size_t>(std::count_if(all.begin(), all.end(), [](double e) { return e > 0.25; }));
  std::printf("# all %zu rows: median |error| %.1f%%, max %.1f%%, %zu above 25%%\n", all.size(), 100 * percentile(all, 50),
              100 * *std::max_element(all.begin(), all.end()), over);

  ResultsFile file(o.out.empty() ? default_results_path("validate") : o.out);
  RunMetadata m = metadata;
  m.program = "sb-dryrun validate";
  m.labels = o.labels;
  write_run_metadata(file.root(), m);
  write_run_end(file.root(), "complete");
  const h5::Node group = file.root().create_group("validate");
  group.set_attr("machine_name", machine.name);
  group.set_attr("machine", sim::format_machine(machine));
  if (!o.reference.empty()) group.set_attr("reference", o.reference);  // predicted_s is measured again
  std::vector<std::string> runs, whats;
  std::vector<int64_t> ranks;
  std::vector<double> sizes, measured, predicted, errors;
  for (const Case& c : cases) {
    runs.push_back(c.run);
    whats.push_back(c.what);
    ranks.push_back(c.ranks);
    sizes.push_back(c.size);
    measured.push_back(c.measured_s);
    predicted.push_back(c.predicted_s);
    errors.push_back(c.error());
  }
  group.set_attr("run", runs);
  group.set_attr("implementation", whats);
  group.write("ranks", ranks);
  group.write("size", sizes);
  group.write("measured_s", measured);
  group.write("predicted_s", predicted);
  group.write("rel_error", errors);
  file.commit();
  std::printf("# written: %s\n", file.final_path().c_str());
  return 0;
}

}  // namespace sb
