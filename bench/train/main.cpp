// sb-train: trains a ResNet, data-parallel over the ranks it is started with, to a target accuracy
// (or for a number of epochs or steps) and reports MLPerf's time-to-accuracy, the per-epoch curve
// (loss, top-1, top-5, images/s), the training throughput against oneDNN's matmul FLOP rate
// measured in the same run, every rank's per-step compute, wait and communication time, and the
// full configuration, to stdout and an HDF5 file (/train, results/SCHEMA.md).

#include <omp.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "bench/train/options.hpp"
#include "bench/train/record.hpp"
#include "common/check.hpp"
#include "common/closed_stdout.hpp"
#include "common/cpu_cores.hpp"
#include "common/mpi_env.hpp"
#include "common/peak_memory.hpp"
#include "common/stats.hpp"
#include "common/usage_error.hpp"
#include "common/watchdog.hpp"
#include "models/checkpoint.hpp"
#include "models/onednn_backend.hpp"
#if SB_HAVE_CUDA
#include "models/cudnn_backend.hpp"
#endif
#include "models/trainer.hpp"
#include "results/environment_agreement.hpp"
#include "results/program_start.hpp"
#include "results/results_file.hpp"
#include "results/run_metadata.hpp"
#include "sim/jitter.hpp"

namespace sb {
namespace {

constexpr const char* kProgram = "sb-train";
// Ranks other than 0 wait this much longer before giving up, so that rank 0 reports first.
constexpr double kTimeoutGraceSeconds = 5;

// mpirun binds a rank to one core by default (Open MPI at 2 ranks or fewer). Compute threads
// beyond the cores a process may run on spin against each other, several times slower; and
// ranks that leave cores of the node unused train slower than they could.
void warn_about_binding(int threads, int ranks_on_node) {
  const int cores = allowed_cores();
  const int online = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  const int wanted = threads > 0 ? threads : omp_get_max_threads();
  if (wanted > cores)
    std::printf("[warning] %d compute threads on %d allowed core%s: run under mpirun with --bind-to none, "
                "or --map-by slot:PE=%d, or set --threads %d\n",
                wanted, cores, cores == 1 ? "" : "s", wanted, cores);
  else if (cores * ranks_on_node < online)
    std::printf("[warning] bound to %d of this node's %d cores (mpirun binds ranks to cores by default); "
                "--bind-to none or --map-by slot:PE=%d lets the rank use more\n",
                cores, online, online / ranks_on_node);
}

// The spread sb-dryrun train takes, to price it at other scales: a rank slower at every step is a
// straggler (--straggler), the rest noise from step to step (--jitter).
void print_rank_spread(const RankRecords& t, int nranks) {
  const sim::RankSpread spread = sim::rank_spread(t.compute, nranks, t.steps);
  if (spread.persistent) {
    // Shares are of the step's mean, which the straggler raises; sb-dryrun's factors are of the
    // other ranks' time: s = share (n - 1) / (n - share), and the noise over the mean's factor.
    const double straggler = spread.slowest_share * (nranks - 1) / (nranks - spread.slowest_share);
    const double jitter = spread.transient_cv * (nranks - 1 + straggler) / nranks;
    std::printf("[ranks] rank %d computes %.3gx the other ranks' time at every step (its share %.4f of the mean, "
                "noise alone moving a share by about %.4f), and around their own shares the ranks' times differ from "
                "step to step by %.2f%%",
                spread.slowest_rank, straggler, spread.slowest_share, spread.standard_error, 100 * spread.transient_cv);
    if (straggler <= sim::kMostStraggler && jitter <= sim::kMostJitter)
      std::printf(" (sb-dryrun train --straggler %.4f --jitter %.4f)\n", straggler, jitter);
    else std::printf(" (past what sb-dryrun train prices: --balance shares the batch by speed)\n");
    return;
  }
  const double cv = sim::between_rank_cv(t.compute, nranks, t.steps);
  std::printf("[ranks] compute time per step differs between ranks by %.2f%% (coefficient of variation within a step",
              100 * cv);
  if (cv <= sim::kMostJitter) std::printf("; no rank slower at every step; sb-dryrun train --jitter %.4f)\n", cv);
  else std::printf(": past what sb-dryrun train --jitter prices)\n");
}

// Per rank, the median over steps of compute, exposed wait and communication: where a slow rank
// (or a slow link) shows.
void print_rank_times(const RankRecords& t, int nranks) {
  if (nranks < 2 || t.steps == 0) return;
  auto median_row = [&](const std::vector<double>& all, int r) {
    return percentile(std::vector<double>(all.begin() + r * t.steps, all.begin() + (r + 1) * t.steps), 50) * 1e3;
  };
  // partition and cycle negotiate what is ready: how much of comm that was, where it is any.
  const bool negotiated = std::any_of(t.negotiation.begin(), t.negotiation.end(), [](double s) { return s > 0; });
  std::printf("[ranks] median ms per step (compute / wait / comm%s):", negotiated ? " (of it negotiating)" : "");
  for (int r = 0; r < nranks; ++r) {
    std::printf(" r%d %.1f/%.1f/%.1f", r, median_row(t.compute, r), median_row(t.wait, r), median_row(t.comm, r));
    if (negotiated) std::printf(" (%.1f)", median_row(t.negotiation, r));
  }
  std::printf("\n");
  print_rank_spread(t, nranks);
}

// The cycle strategy fuses what each cycle finds: how many buckets that made, step by step.
void print_cycle_buckets(const models::TrainConfig& config, const models::TrainResult& result, int nranks) {
  if (nranks < 2 || config.bucket_strategy != BucketStrategy::cycle || result.step_times.empty()) return;
  std::vector<double> buckets, cycles;
  for (const models::StepTimes& t : result.step_times) {
    buckets.push_back(static_cast<double>(t.buckets));
    cycles.push_back(static_cast<double>(t.negotiations));
  }
  std::printf("[buckets] %g ms cycles, %.0f a step, fused the gradients into %.0f buckets a step (medians; buckets %.0f "
              "to %.0f)\n",
              config.cycle_ms, percentile(cycles, 50), percentile(buckets, 50),
              *std::min_element(buckets.begin(), buckets.end()), *std::max_element(buckets.begin(), buckets.end()));
}

// A peak per rank: the one rank's, or the median over ranks and the largest (whose).
void print_peak(const char* what, const std::vector<int64_t>& bytes) {
  if (bytes.empty()) return;
  constexpr double kGB = 1e9;
  if (bytes.size() == 1) {
    std::printf("[memory] %s: %.2f GB\n", what, static_cast<double>(bytes[0]) / kGB);
    return;
  }
  const auto largest = std::max_element(bytes.begin(), bytes.end());
  std::printf("[memory] %s per rank: median %.2f GB, largest %.2f GB (rank %td)\n", what,
              percentile(std::vector<double>(bytes.begin(), bytes.end()), 50) / kGB, static_cast<double>(*largest) / kGB,
              largest - bytes.begin());
}

void print_peak_memory(const RankRecords& r) {
  print_peak("peak host memory (max RSS)", r.peak_host_bytes);
  print_peak("peak GPU memory in use (cudaMemGetInfo)", r.peak_device_bytes);
}

// --profile-ops: rank 0's time per op kind, per step, against the unprofiled median step.
void print_op_profile(const models::TrainResult& r) {
  if (r.profiled_steps == 0) return;
  const double steps = static_cast<double>(r.profiled_steps);
  double total = 0;
  for (const models::OpTime& t : r.op_profile) total += t.seconds;
  std::printf("[ops] rank 0, %lld steps profiled, each op timed alone (the device waited for after it); per step:\n",
              static_cast<long long>(r.profiled_steps));
  for (const models::OpTime& t : r.op_profile)
    std::printf("[ops] %5.1f%% %10.3f ms %6.0f calls  %s\n", 100 * t.seconds / std::max(total, 1e-12),
                1e3 * t.seconds / steps, static_cast<double>(t.calls) / steps, t.op.c_str());
  const size_t first_unprofiled = 1 + static_cast<size_t>(r.profiled_steps);
  if (r.step_seconds.size() > first_unprofiled) {
    const std::vector<double> unprofiled(r.step_seconds.begin() + static_cast<std::ptrdiff_t>(first_unprofiled),
                                         r.step_seconds.end());
    std::printf("[ops] the ops' sum: %.3f ms per step; an unprofiled step: %.3f ms (median, data wait included)\n",
                1e3 * total / steps, 1e3 * percentile(unprofiled, 50));
  }
}

// What checkpointing cost this process: rank 0's time per checkpoint, and its share of the run.
void print_checkpoint_cost(const models::TrainResult& r, const std::string& dir) {
  if (r.checkpoint_seconds.empty()) return;
  double total = 0;
  for (double s : r.checkpoint_seconds) total += s;
  std::printf("[checkpoint] %zu written to %s, median %.3f s each: %.1f%% of this process's run time\n",
              r.checkpoint_seconds.size(), dir.c_str(), percentile(r.checkpoint_seconds, 50),
              100 * total / std::max(r.run_s - r.earlier_processes_s, 1e-9));
}

// A resumed run's times count the processes' run time only; this adds the wall time they lost.
void print_resumes(const models::TrainResult& r) {
  if (r.resumes == 0) return;
  std::printf("[resume] resumed %lld time%s", static_cast<long long>(r.resumes), r.resumes == 1 ? "" : "s");
  if (r.resume_gap_s < 0) {
    std::printf("; the wall time lost to it is not known (a checkpoint from before it was kept)\n");
    return;
  }
  std::printf(": %.1f s of wall time since run_start was no process's run time; in wall time the run took %.1f s",
              r.resume_gap_s, r.run_s + r.resume_gap_s);
  if (r.reached_target) std::printf(", the target %.1f s", r.time_to_target_s + r.resume_gap_s);
  std::printf("\n");
}

int run(int argc, char** argv, const WorldLayout& layout) {
  const bool root = layout.rank == 0;
  ProgramStart<TrainOptions> start = start_program<TrainOptions>(
      kProgram, "train", root, [&](bool print) { return parse_train_options(argc, argv, print); },
      [&](const TrainOptions& o) {
        if (root) check_rank0_outputs(o);
      });
  if (start.failed) return kExitUsage;
  if (!start.options) return 0;
  const std::optional<TrainOptions>& parsed = start.options;
  try {
    RunMetadata metadata = describe_run(kProgram, argc, argv);
    metadata.layout = layout;
    compare_environments(metadata);
    metadata.labels = parsed->labels;
    metadata.libraries.emplace_back("oneDNN", models::OnednnBackend::library_version());
    const bool on_gpu = parsed->config.backend == "cudnn";
#if SB_HAVE_CUDA
    if (on_gpu) metadata.libraries.emplace_back("cuDNN", models::CudnnBackend::library_version());
#endif
    if (root) warn_about_binding(parsed->config.threads, layout.local_size);
    TrainResultsSaver saver(std::move(start.file), metadata, *parsed);  // the file: rank 0's alone
    models::TrainProgress progress;
    // After every epoch the results so far go to the final name: a rank 0 killed outright (no
    // handler runs) leaves them.
    if (root) progress.on_epoch_done = [&](int64_t epochs) { saver.save_snapshot(progress, epochs); };
    // A rank that hangs (or a peer lost without the launcher noticing) ends the job after
    // --timeout seconds without a finished step; SIGTERM (a scheduler's time limit, or the
    // launcher after a peer died) ends it at once. Either way rank 0 saves what the run finished,
    // and the last checkpoint is whole (written atomically).
    // A fatal library error (die) does the same through the watchdog. (The watchdog or die has
    // printed the reason; this adds the way on, where there is one.)
    Watchdog watchdog(parsed->timeout_seconds, root ? 0 : kTimeoutGraceSeconds,
                      root ? Watchdog::FaultHandler([&](const std::string& reason) {
                        saver.save_partial(progress, reason);
                        if (!parsed->config.checkpoint_dir.empty())
                          std::fprintf(stderr, "%s: resume from the last checkpoint with --resume\n", kProgram);
                      })
                           : Watchdog::FaultHandler());
    models::TrainResult result;
    try {
      // Bad data or settings fail alike on every rank (the ranks agree on what one rank finds
      // alone: common/agreed_usage.hpp), so each throws and reports the same line; rank 0 prints it.
      result = models::train(parsed->config, root ? stdout : nullptr, MPI_COMM_WORLD,
                             [&](const std::string& phase) { watchdog.phase(phase); }, &progress);
    } catch (const UsageError& e) {
      // Bad input found mid-run (a loss that diverged, a shard with no image under --bn-span): the
      // finished steps are results, saved saying how the run ended (replacing an epoch's snapshot,
      // which names the run as going on). Bad input found before the first step leaves no file.
      if (root && (saver.has_snapshot() || progress.has_finished_steps()))
        saver.save_partial(progress, std::string("failed: ") + e.what());
      throw;
    } catch (const std::exception& e) {  // a fault (a checkpoint on a full disk): keep what finished
      if (root) saver.save_partial(progress, std::string("failed: ") + e.what());
      throw;
    }
    // The matmul ceiling, measured once training is over, while nothing else runs (the loader's
    // threads would share the cores), every rank at once as they trained, the machine as warm as
    // training left it; not before, where it would delay the run's start and the report of bad
    // data (or a resume). On a GPU the CPU's matmul is no ceiling: not measured, recorded as 0.
    // Training's peak, before the matmul below allocates its matrices (48 MB).
    const int64_t training_peak_bytes = peak_resident_bytes();
    watchdog.phase("measuring oneDNN's matmul rate");
    const double matmul = on_gpu ? 0.0 : models::OnednnBackend::matmul_gflops();
    saver.set_matmul_gflops(matmul);
    const RankRecords records = gather_rank_records(result, training_peak_bytes, layout.nranks);
    if (on_gpu) metadata.devices = gather_strings(result.device, layout.nranks);  // each rank's GPU
    if (!root) return 0;
    const double model_rate = result.images_per_s * result.train_flops_per_image / 1e9;
    if (on_gpu)
      std::printf("[throughput] %.2f img/s (median step, first%s excluded) = %.1f GFLOP/s of model FLOPs on %d GPU%s, "
                  "cuDNN %s\n",
                  result.images_per_s, result.profiled_steps ? " and profiled" : "", model_rate, layout.nranks,
                  layout.nranks == 1 ? "" : "s", models::precision_name(parsed->config.precision).c_str());
    else
      std::printf("[throughput] %.2f img/s (median step, first%s excluded) = %.1f GFLOP/s of model FLOPs on %d rank%s; "
                  "oneDNN fp32 matmul 2048^3: %.1f GFLOP/s per rank; %.0f%% of it\n",
                  result.images_per_s, result.profiled_steps ? " and profiled" : "", model_rate, layout.nranks,
                  layout.nranks == 1 ? "" : "s", matmul, 100 * model_rate / (matmul * layout.nranks));
    print_rank_times(records, layout.nranks);
    print_cycle_buckets(parsed->config, result, layout.nranks);
    print_op_profile(result);
    const double consumed = result.images_per_s / layout.nranks;
    std::printf("[loader] rank 0's %d workers alone: %.1f img/s, against %.1f img/s consumed per rank%s\n",
                parsed->config.workers, result.loader_images_per_s, consumed,
                result.loader_images_per_s < consumed ? ": the loader is the bottleneck (raise --workers)" : "");
    print_peak_memory(records);
    if (result.skipped_samples > 0)
      std::printf("[data] %lld images could not be read and were left out of their batches (training and evaluation, "
                  "all ranks); the rates above count the images trained\n",
                  static_cast<long long>(result.skipped_samples));
    if (parsed->config.target_accuracy > 0) {
      if (result.reached_target)
        std::printf("[result] time to %.4f top-1: %.1f s (%.4f rank-hours)\n", parsed->config.target_accuracy,
                    result.time_to_target_s, result.time_to_target_s * layout.nranks / 3600);
      else
        std::printf("[result] target %.4f top-1 not reached (best %.4f) in %.1f s\n", parsed->config.target_accuracy,
                    result.best_top1, result.run_s);
    }
    print_checkpoint_cost(result, parsed->config.checkpoint_dir);
    print_resumes(result);
    saver.save_complete(metadata, result, records);
    return 0;
  } catch (const UsageError& e) {
    if (root) std::fprintf(stderr, "%s: error: %s\n", kProgram, e.what());
    return kExitUsage;
  }
}

}  // namespace
}  // namespace sb

int main(int argc, char** argv) {
  sb::outlive_closed_stdout("sb-train");
  // SERIALIZED: the gradient exchange's thread calls MPI while the main thread computes.
  sb::block_termination_signals();
  sb::MpiSession session(&argc, &argv, MPI_THREAD_SERIALIZED);
  const sb::WorldLayout layout = sb::discover_world_layout();
  try {
    return sb::run(argc, argv, layout);
  } catch (const std::exception& e) {
    sb::die(__FILE__, __LINE__, std::string("sb-train: ") + e.what());
  }
}
