// sb-buckets: the gradient-fusion benchmark without training. A model's gradient list and the
// times its backward pass produces them (measured on rank 0 on this backend, or read from a
// profile) are replayed on every rank against real allreduces, for each bucket strategy and
// size: iteration time, exposed (non-overlapped) communication, overlap fraction and each
// bucket's start and end, against two baselines after backward (no overlap: every tensor its own
// allreduce; fused: one allreduce of all gradients). The cycle strategy runs Horovod's loop live,
// as sb-train does, so its buckets are what its cycles find. A table, the best size per strategy,
// and an HDF5 file (/buckets, results/SCHEMA.md).

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <ranges>

#include "bench/buckets/options.hpp"
#include "bench/buckets/results_saver.hpp"
#include "collectives/buckets/cycle_exchange.hpp"
#include "collectives/buckets/replay.hpp"
#include "collectives/buckets/replay_trace.hpp"
#include "common/atomic_file.hpp"
#include "common/check.hpp"
#include "common/closed_stdout.hpp"
#include "common/mpi_env.hpp"
#include "common/sizes.hpp"
#include "common/stats.hpp"
#include "common/text_input.hpp"
#include "common/text_fields.hpp"
#include "common/trace_events.hpp"
#include "common/usage_error.hpp"
#include "common/watchdog.hpp"
#include "models/backward_timing.hpp"
#include "models/onednn_backend.hpp"
#include "results/buckets_record.hpp"
#include "results/environment_agreement.hpp"
#include "results/program_start.hpp"
#include "results/results_file.hpp"
#include "results/run_metadata.hpp"
#include "sim/jitter.hpp"

namespace sb {
namespace {

constexpr const char* kProgram = "sb-buckets";
// Ranks other than 0 wait this much longer before giving up, so that rank 0 reports first.
constexpr double kTimeoutGraceSeconds = 5;
// Longer than any training step, and far inside what a sleep can count.
constexpr double kLongestEmulatedStepSeconds = 3600;

using Row = BucketRow;

// The configuration a row measured, as --trace names its step.
std::string configuration_name(const std::string& sweep, BucketStrategy strategy, double mb, double cycle_ms) {
  char text[160];
  if (sweep == "no-overlap" || sweep == "fused" || strategy == BucketStrategy::per_tensor)
    std::snprintf(text, sizeof text, "%s", sweep.c_str());
  else if (strategy == BucketStrategy::cycle)
    std::snprintf(text, sizeof text, "%s, %g MiB threshold", sweep_title(sweep, cycle_ms).c_str(), mb);
  else
    std::snprintf(text, sizeof text, "%s, %g MiB %s", sweep.c_str(), mb,
                  strategy == BucketStrategy::partition ? "partitions" : "buckets");
  return text;
}

// What measures a configuration: Horovod's loop live for cycle (its buckets are whatever its
// cycles find, as in sb-train), else a GradientExchange of the strategy's plan for this profile.
std::unique_ptr<GradientAverager> make_replayed_exchange(const ExchangeConfig& config, const BackwardProfile& profile,
                                                         BucketStrategy strategy, double mb, double cycle_ms,
                                                         std::vector<float*> gradients) {
  if (strategy == BucketStrategy::cycle)
    return std::make_unique<CycleExchange>(MPI_COMM_WORLD, config, profile.tensors, cycle_ms * 1e-3, mb,
                                           std::move(gradients));
  return std::make_unique<GradientExchange>(MPI_COMM_WORLD, config, plan_buckets_swept(profile.tensors, strategy, mb),
                                            std::move(gradients));
}

// --jitter's draws and --straggler: this rank's factor for each timed step (seeded by the rank;
// the last rank's times the straggler factor, when there are 2 or more), and the slowest rank's.
// Every configuration replays the same, so that its rows differ by their buckets alone.
struct StepJitter {
  std::vector<double> mine, slowest;  // by timed step
  double mean_slowest() const { return mean(slowest); }
};

// Collective over MPI_COMM_WORLD.
StepJitter draw_step_jitter(double cv, double straggler, int steps, int rank, int nranks) {
  StepJitter jitter{std::vector<double>(static_cast<size_t>(steps), 1.0), std::vector<double>(static_cast<size_t>(steps))};
  if (cv > 0) {
    std::mt19937_64 engine(0x5eed0000ull + static_cast<uint64_t>(rank));
    std::normal_distribution<double> z(0.0, 1.0);
    for (double& f : jitter.mine) f = sim::jitter_factor(cv, z(engine));
  }
  if (nranks >= 2 && rank == nranks - 1)
    for (double& f : jitter.mine) f *= straggler;
  SB_MPI_CHECK(MPI_Allreduce(jitter.mine.data(), jitter.slowest.data(), steps, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
  return jitter;
}

// Median over steps of the slowest rank's iteration; the other figures from that same step, which
// --trace draws (the same step on every rank: all sort the same slowest times). Each timed step
// replays this rank's backward at its --jitter factor; exposed is what the step took beyond the
// slowest rank's backward. cycle_ms: the cycle strategy's cycle time (0 for the others).
Row measure(const BucketsOptions& o, const BackwardProfile& profile, const StepJitter& jitter, const std::string& sweep,
            BucketStrategy strategy, double mb, bool overlap, std::vector<std::vector<float>>& gradients,
            Watchdog& watchdog, TraceRecorder* trace, Progress progress = Progress::thread, double cycle_ms = 0) {
  std::vector<float*> pointers;
  for (auto& g : gradients) pointers.push_back(g.data());
  ExchangeConfig config = o.exchange;
  config.overlap = overlap;
  config.progress = progress;
  const std::unique_ptr<GradientAverager> owned =
      make_replayed_exchange(config, profile, strategy, mb, cycle_ms, std::move(pointers));
  GradientAverager& exchange = *owned;
  for (int i = 0; i < o.warmup_iters; ++i) {
    replay_step(exchange, profile, MPI_COMM_WORLD);
    watchdog.beat();
  }
  struct Timed {
    double slowest_s;  // the slowest rank's iteration
    size_t step;
    ReplayResult replay;
  };
  // This rank's backward in a timed step, at its factor.
  const auto replayed = [&](size_t step) {
    return o.jitter > 0 || o.straggler > 1 ? sim::slowed_profile(profile, jitter.mine[step]) : profile;
  };
  std::vector<Timed> steps;
  for (int i = 0; i < o.iters; ++i) {
    ReplayResult r = replay_step(exchange, replayed(static_cast<size_t>(i)), MPI_COMM_WORLD);
    double slowest = 0;
    SB_MPI_CHECK(MPI_Allreduce(&r.iteration_s, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    steps.push_back({slowest, static_cast<size_t>(i), std::move(r)});
    watchdog.beat();
  }
  std::sort(steps.begin(), steps.end(), [](const Timed& a, const Timed& b) { return a.slowest_s < b.slowest_s; });
  const Timed& at_median = steps[steps.size() / 2];
  const double slowest = at_median.slowest_s;
  const ReplayResult& median = at_median.replay;
  Row row;
  row.bucket_mb = mb;
  row.buckets = median.plan.buckets.size();  // a cycle loop's: the median step's
  row.iteration_s = slowest;
  row.exposed_s = std::max(slowest - jitter.slowest[at_median.step] * profile.backward_s, 0.0);
  row.communication_s = median.communication_s;
  row.negotiation_s = median.negotiation_s;
  row.negotiations = median.negotiations;
  row.overlap = row.communication_s > 0 ? std::clamp(1.0 - row.exposed_s / row.communication_s, 0.0, 1.0) : 1.0;
  row.bucket_start_s = median.bucket_start_s;
  row.bucket_end_s = median.bucket_end_s;
  if (trace) {
    char args[256];
    std::snprintf(args, sizeof args,
                  "\"buckets\":%zu,\"bucket_mb\":%g,\"slowest_rank_iteration_ms\":%.4f,\"exposed_ms\":%.4f,"
                  "\"overlap\":%.4f",
                  row.buckets, mb, row.iteration_s * 1e3, row.exposed_s * 1e3, row.overlap);
    trace_replayed_step(*trace, configuration_name(sweep, strategy, mb, cycle_ms), args, replayed(at_median.step),
                        median);
  }
  return row;
}

// profile_text: the --profile file as rank 0 read it at start-up (empty on the other ranks).
BackwardProfile obtain_profile(const BucketsOptions& o, const WorldLayout& layout, const std::string& profile_text) {
  BackwardProfile profile;
  if (!o.profile.empty()) {
    // Rank 0 sends the text it read: every rank replays the same profile (copies on other nodes
    // could differ, and give buckets that do not match), and only rank 0 needs the file.
    profile = parse_backward_profile(broadcast_string(profile_text, 0, MPI_COMM_WORLD), o.profile);
  } else {
    // Rank 0 measures alone, so that the other ranks' compute does not slow it; all use its figures.
    models::OnednnBackend backend(o.threads);
    models::ResNet model(backend, models::make_resnet_config(o.model, 3, 1000, o.image_size, 1));
    if (layout.rank == 0) profile = models::measure_backward(model, o.batch, o.image_size, o.profile_steps);
    else
      for (const models::Parameter* p : model.parameters())
        profile.tensors.push_back({p->name, static_cast<size_t>(p->value.count())});
    profile.ready_s.resize(profile.tensors.size());
    SB_MPI_CHECK(MPI_Bcast(&profile.backward_s, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    SB_MPI_CHECK(MPI_Bcast(&profile.forward_s, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    SB_MPI_CHECK(MPI_Bcast(profile.ready_s.data(), static_cast<int>(profile.ready_s.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD));
  }
  profile.backward_s *= o.compute_scale;
  profile.forward_s *= o.compute_scale;
  for (double& t : profile.ready_s) t *= o.compute_scale;
  return profile;
}

// A sweep measured: what it ran (BucketsOptions::sweeps), its group name (the polled ones
// <strategy>@poll) and its rows.
struct Sweep {
  BucketsSweep planned;
  std::string name;
  std::vector<Row> rows;
};

// 0.5 -> "0.5", 5 -> "5": a cycle time as --cycle-ms takes it.
std::string format_double(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

// Rank 0's last lines: each sweep's best size, against per-tensor and no overlap.
void print_best_sizes(const std::vector<Sweep>& results, const Row& no_overlap, bool both_progress_modes) {
  std::printf("# best bucket size per strategy (iteration time; vs per-tensor overlapped, vs no overlap%s):\n",
              both_progress_modes ? ", polled vs communication thread" : "");
  auto best_of = [](const std::vector<Row>& rows) -> const Row& {
    return *std::min_element(rows.begin(), rows.end(),
                             [](const Row& a, const Row& b) { return a.iteration_s < b.iteration_s; });
  };
  auto find = [&](const std::string& name) -> const Sweep* {
    for (const Sweep& sweep : results)
      if (sweep.name == name) return &sweep;
    return nullptr;
  };
  for (const Sweep& sweep : results) {
    const Row& best = best_of(sweep.rows);
    std::printf("#   %-15s %8.2f MiB: %.2f ms", sweep.name.c_str(), best.bucket_mb, best.iteration_s * 1e3);
    const bool polled = sweep.planned.progress == Progress::poll;
    if (const Sweep* per_tensor = find(polled ? "per-tensor@poll" : "per-tensor"))
      std::printf(", %.2fx per-tensor", per_tensor->rows.front().iteration_s / best.iteration_s);
    std::printf(", %.2fx no overlap", no_overlap.iteration_s / best.iteration_s);
    // Fewer cycles than backward's length over the cycle time: the loop fell behind.
    if (sweep.planned.strategy == BucketStrategy::cycle) std::printf(", %zu cycles a step", best.negotiations);
    // A polled sweep's threaded one has its name without "@poll".
    if (const Sweep* threaded = polled ? find(sweep.name.substr(0, sweep.name.rfind('@'))) : nullptr)
      std::printf(", %.2fx the thread's best (%.2f ms)", best_of(threaded->rows).iteration_s / best.iteration_s,
                  best_of(threaded->rows).iteration_s * 1e3);
    std::printf("\n");
  }
}

// Collective: every rank's events to rank 0, which writes the file.
void write_trace_file(const BucketsOptions& o, const WorldLayout& layout, const TraceRecorder& trace) {
  char scale[32];
  std::snprintf(scale, sizeof scale, "%g", o.compute_scale);
  const TraceAbout about = {
      {"program", kProgram},
      {"model", o.profile.empty() ? o.model : "profile:" + o.profile},
      {"ranks", std::to_string(layout.nranks)},
      {"algo", o.exchange.algorithm},
      {"transport", std::string(name_of(o.exchange.impl.transport))},
      {"compute_scale", scale},
      {"steps", "each configuration's median step (of the slowest rank's times), as its row reports it"},
      {"clock", "microseconds since a barrier every rank left before the first configuration"}};
  const size_t events = write_trace(MPI_COMM_WORLD, o.trace, trace, {"compute", "communication"}, about);
  if (layout.rank == 0)
    std::printf("# trace: %zu events of %d rank%s, written to %s: open it in ui.perfetto.dev or chrome://tracing\n",
                events, layout.nranks, layout.nranks == 1 ? "" : "s", o.trace.c_str());
}

int run(int argc, char** argv, const WorldLayout& layout) {
  const bool root = layout.rank == 0;
  std::string profile_text;
  ProgramStart<BucketsOptions> start = start_program<BucketsOptions>(
      kProgram, "buckets", root, [&](bool print) { return parse_buckets_options(argc, argv, print); },
      [&](const BucketsOptions& o) {
        if (!root) return;  // rank 0 alone reads the profile and writes these: another node may lack them
        if (!o.profile.empty()) {
          profile_text = read_text_input(o.profile, "profile");
          parse_backward_profile(profile_text, o.profile);  // a bad one is bad input
        }
        if (!o.trace.empty())
          if (const std::string why = why_not_writable(o.trace); !why.empty()) throw UsageError("--trace: " + why);
        if (!o.write_profile.empty())
          if (const std::string why = why_not_writable(o.write_profile); !why.empty())
            throw UsageError("--write-profile: " + why);
      });
  if (start.failed) return kExitUsage;
  if (!start.options) return 0;
  const BucketsOptions& o = *start.options;
  RunMetadata metadata = describe_run(kProgram, argc, argv);
  metadata.layout = layout;
  compare_environments(metadata);
  metadata.labels = o.labels;
  BucketsSettings settings;
  settings.model = o.profile.empty() ? o.model : std::string("profile:") + o.profile;
  settings.compute_scale = o.compute_scale;
  settings.algo = o.exchange.algorithm;
  settings.transport = std::string(name_of(o.exchange.impl.transport));
  settings.iters = o.iters;
  settings.trace = o.trace;
  const StepJitter jitter = draw_step_jitter(o.jitter, o.straggler, o.iters, layout.rank, layout.nranks);
  settings.jitter_cv = o.jitter;
  settings.straggler = o.straggler;
  settings.slowest_rank_factor = jitter.mean_slowest();
  BucketsResultsSaver saver(std::move(start.file), metadata, settings);
  // A rank that hangs (or a peer lost without the launcher noticing) ends the job after
  // --timeout seconds without progress, SIGINT/SIGTERM at once; rank 0 saves the rows measured.
  Watchdog watchdog(o.timeout_seconds, root ? 0 : kTimeoutGraceSeconds,
                    root ? Watchdog::FaultHandler([&](const std::string& reason) { saver.save(reason); })
                         : Watchdog::FaultHandler());
  watchdog.phase(o.profile.empty() ? "measuring the backward pass on rank 0" : "reading the profile");
  const BackwardProfile profile = obtain_profile(o, layout, profile_text);
  // The watchdog ends a job whose step outlasts --timeout. A profile (or a --compute-scale) whose
  // emulated step alone takes that long had run until then and ended as a fault, after its whole
  // --timeout; one of 1e306 s (no --timeout) overflowed the sleeps, which then did not sleep, and
  // was reported complete at 0.03 ms a step. Both are bad input. Every rank holds the same
  // profile, so all of them return here.
  const double step_s = profile.forward_s + profile.backward_s;
  const bool too_long = !(step_s < kLongestEmulatedStepSeconds);  // NaN too
  if (too_long || (o.timeout_seconds > 0 && step_s >= o.timeout_seconds)) {
    char limit[128];
    if (too_long) std::snprintf(limit, sizeof limit, "not under an hour, the longest replayed");
    else std::snprintf(limit, sizeof limit, "not under --timeout's %g s: the watchdog would end the job in its first step",
                       o.timeout_seconds);
    if (root)
      std::fprintf(stderr, "%s: error: each emulated step would compute for %.3g s (forward and backward%s), %s\n",
                   kProgram, step_s, o.compute_scale != 1 ? ", after --compute-scale" : "", limit);
    return kExitUsage;
  }
  if (root && !o.write_profile.empty()) write_backward_profile(o.write_profile, profile);
  saver.set_profile(profile);
  size_t total = 0;
  for (const GradientTensor& t : profile.tensors) total += t.count;
  const bool sweeps_cycles = std::find(o.strategies.begin(), o.strategies.end(), BucketStrategy::cycle) != o.strategies.end();
  std::vector<std::vector<float>> gradients;
  for (const GradientTensor& t : profile.tensors) gradients.emplace_back(t.count, 1.0f + static_cast<float>(layout.rank));

  if (root) {
    std::printf("# %s: %s, %zu tensors, %.1f MiB of fp32 gradients; backward %.1f ms%s; %d ranks; %s allreduce on %s\n",
                kProgram, o.profile.empty() ? o.model.c_str() : o.profile.c_str(), profile.tensors.size(),
                total * 4 / kBytesPerMiB, profile.backward_s * 1e3, o.compute_scale != 1 ? " (scaled)" : "", layout.nranks,
                o.exchange.algorithm.c_str(), std::string(name_of(o.exchange.impl.transport)).c_str());
    if (sweeps_cycles)
      std::printf("# cycle: Horovod's loop, live: each cycle (%s ms) fuses what it finds ready, under the bucket size%s\n",
                  join_list(o.cycle_ms | std::views::transform([](double ms) { return format_double(ms); })).c_str(),
                  std::find(o.progress.begin(), o.progress.end(), Progress::poll) != o.progress.end()
                      ? "; its own thread, never polled"
                      : "");
    if (o.jitter > 0)
      std::printf("# jitter %g: each rank's replayed backward of a timed step x (1 + %g z), z normal; the slowest "
                  "rank's factor averages %.4f over the %d steps\n",
                  o.jitter, o.jitter, jitter.mean_slowest(), o.iters);
    if (o.straggler > 1)
      std::printf("# straggler %g: rank %d replays its backward %g times slower%s; the slowest rank's factor averages "
                  "%.4f\n", o.straggler, layout.nranks - 1, o.straggler,
                  layout.nranks < 2 ? " (one rank: none, it is the baseline)" : "", jitter.mean_slowest());
    std::printf("# %-10s  %9s  %7s  %11s  %11s  %11s  %8s  %9s\n", "strategy", "bucket_MiB", "buckets", "iter(ms)",
                "exposed(ms)", "comm(ms)", "overlap", "vs_fused");
    std::fflush(stdout);
  }
  const double total_mb = total * sizeof(float) / kBytesPerMiB;
  watchdog.phase("measuring the no-overlap baseline");
  TraceRecorder trace;
  TraceRecorder* const tracing = o.trace.empty() ? nullptr : &trace;
  if (tracing) trace.start(MPI_COMM_WORLD);  // every rank: the options are the same everywhere
  const Row no_overlap =
      measure(o, profile, jitter, "no-overlap", BucketStrategy::per_tensor, 0, false, gradients, watchdog, tracing);
  saver.add("no-overlap", no_overlap);
  watchdog.phase("measuring the fused baseline");
  const Row fused =
      measure(o, profile, jitter, "fused", BucketStrategy::fixed, total_mb * 2, false, gradients, watchdog, tracing);
  saver.add("fused", fused);
  auto print = [&](const char* name, const Row& r) {
    if (root)
      std::printf("  %-10s  %9.2f  %7zu  %11.2f  %11.2f  %11.2f  %7.0f%%  %8.2fx\n", name, r.bucket_mb, r.buckets,
                  r.iteration_s * 1e3, r.exposed_s * 1e3, r.communication_s * 1e3, 100 * r.overlap,
                  fused.iteration_s / r.iteration_s);
    if (root) std::fflush(stdout);
  };
  print("no-overlap", no_overlap);
  print("fused", fused);
  const std::vector<BucketsSweep> sweeps = o.sweeps();
  saver.plan_snapshots(1 + sweeps.size());  // the baselines are the first
  auto snapshot = [&](const std::string& sweep) {
    if (!root) return;
    watchdog.phase("saving the results so far");
    saver.snapshot(sweep);
  };
  snapshot("the baselines");

  std::vector<Sweep> results;
  for (const BucketsSweep& planned : sweeps) {
    const bool polled = planned.progress == Progress::poll;
    Sweep sweep{planned, sweep_name(planned.strategy, planned.cycle_ms, o.cycle_ms.size() == 1, polled), {}};
    const std::vector<double> sizes =
        planned.strategy == BucketStrategy::per_tensor ? std::vector<double>{0} : o.bucket_sizes();
    for (double mb : sizes) {
      char phase[128];
      std::snprintf(phase, sizeof phase, "measuring %s at %g MiB", sweep.name.c_str(), mb);
      watchdog.phase(phase);
      sweep.rows.push_back(measure(o, profile, jitter, sweep.name, planned.strategy, mb, true, gradients, watchdog, tracing,
                                   planned.progress, planned.cycle_ms));
      saver.add(sweep.name, sweep.rows.back(), planned.cycle_ms);
      print(sweep.name.c_str(), sweep.rows.back());
    }
    results.push_back(std::move(sweep));
    snapshot(results.back().name);
  }
  if (root) print_best_sizes(results, no_overlap, o.progress.size() > 1);
  saver.save("complete");  // before the trace, whose writing may fail
  if (tracing) {
    watchdog.phase("writing the trace");
    write_trace_file(o, layout, trace);
  }
  return 0;
}

}  // namespace
}  // namespace sb

int main(int argc, char** argv) {
  sb::outlive_closed_stdout("sb-buckets");
  sb::block_termination_signals();  // before MPI's threads start: SIGINT/SIGTERM go to the watchdog
  sb::MpiSession session(&argc, &argv, MPI_THREAD_SERIALIZED);
  const sb::WorldLayout layout = sb::discover_world_layout();
  try {
    return sb::run(argc, argv, layout);
  } catch (const std::exception& e) {
    sb::die(__FILE__, __LINE__, std::string("sb-buckets: ") + e.what());
  }
}
