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
#include "common/check.hpp"
#include "common/mpi_env.hpp"
#include "common/stats.hpp"
#include "common/usage_error.hpp"
#include "common/watchdog.hpp"
#include "models/checkpoint.hpp"
#include "models/onednn_backend.hpp"
#if SB_HAVE_CUDA
#include "models/cudnn_backend.hpp"
#endif
#include "models/trainer.hpp"
#include "results/program_start.hpp"
#include "results/results_file.hpp"
#include "results/run_metadata.hpp"

namespace sb {
namespace {

constexpr const char* kProgram = "sb-train";
// Ranks other than 0 wait this much longer before giving up, so that rank 0 reports first.
constexpr double kTimeoutGraceSeconds = 5;

// mpirun binds a rank to one core by default (Open MPI at 2 ranks or fewer). Compute threads
// beyond the cores a process may run on spin against each other, several times slower; and
// ranks that leave cores of the node unused train slower than they could.
void warn_about_binding(int threads, int ranks_on_node) {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
  const int cores = CPU_COUNT(&allowed);
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

void write_config(const h5::Node& group, const models::TrainConfig& c) {
  group.set_attr("model", c.model);
  group.set_attr("data", c.data);
  group.set_attr("backend", c.backend);
  group.set_attr("precision", models::precision_name(c.precision));
  group.set_attr("cudnn_search", std::string(c.cudnn_timed_search ? "timed" : "heuristic"));
  group.set_attr("cuda_graph", static_cast<int64_t>(c.cuda_graph));
  group.set_attr("loss_scale", c.loss_scale);
  group.set_attr("profile_ops", c.profile_ops);
  group.set_attr("image_size", c.image_size);
  group.set_attr("batch", c.batch);
  group.set_attr("eval_batch", c.eval_batch);
  group.set_attr("epochs", c.epochs);
  group.set_attr("max_steps", c.max_steps);
  group.set_attr("target_accuracy", c.target_accuracy);
  group.set_attr("eval_every", c.eval_every);
  group.set_attr("optimizer", models::optimizer_name(c.optimizer.kind));
  group.set_attr("momentum", static_cast<double>(c.optimizer.momentum));
  group.set_attr("weight_decay", static_cast<double>(c.optimizer.weight_decay));
  group.set_attr("decay_bn_bias", static_cast<int64_t>(c.optimizer.decay_bn_and_bias));
  group.set_attr("lars_eta", static_cast<double>(c.optimizer.lars_eta));
  group.set_attr("base_lr", c.base_lr);
  group.set_attr("warmup_epochs", c.warmup_epochs);
  const char* decay[] = {"cosine", "poly", "step"};
  group.set_attr("lr_decay", decay[static_cast<int>(c.decay)]);
  group.set_attr("label_smoothing", static_cast<double>(c.label_smoothing));
  group.set_attr("zero_init_residual", static_cast<int64_t>(c.zero_init_residual));
  group.set_attr("seed", static_cast<int64_t>(c.seed));
  group.set_attr("threads", static_cast<int64_t>(c.threads));
  group.set_attr("workers", static_cast<int64_t>(c.workers));
  group.set_attr("resumed", static_cast<int64_t>(c.resume));
  group.set_attr("algo", c.exchange.algorithm);
  group.set_attr("transport", std::string(name_of(c.exchange.impl.transport)));
  group.set_attr("bucket_strategy", bucket_strategy_name(c.bucket_strategy));
  group.set_attr("bucket_mb", c.bucket_mb);
  group.set_attr("overlap", static_cast<int64_t>(c.exchange.overlap));
  group.set_attr("progress", progress_name(c.exchange.progress));
  group.set_attr("accumulate", c.accumulate);
  group.set_attr("compressor", c.exchange.compressor);
  group.set_attr("compressor_ratio", c.exchange.compressor_params.ratio);
  group.set_attr("compressor_levels", static_cast<int64_t>(c.exchange.compressor_params.levels));
  group.set_attr("error_feedback", static_cast<int64_t>(c.exchange.error_feedback));
  group.set_attr("straggler_rank", static_cast<int64_t>(c.straggler_rank));
  group.set_attr("straggler_factor", c.straggler_factor);
  group.set_attr("resize_schedule", models::format_epoch_schedule(c.resize_schedule));
  group.set_attr("batch_schedule", models::format_epoch_schedule(c.batch_schedule));
  group.set_attr("balance", static_cast<int64_t>(c.balance));
  group.set_attr("bn_span", c.bn_span);
}

// Every rank's per-step times, gathered on rank 0 as [ranks x steps] (row-major).
struct RankTimes {
  std::vector<double> data, compute, wait, comm;
  size_t steps = 0;
};

RankTimes gather_step_times(const models::TrainResult& r, int nranks) {
  std::vector<double> mine;
  for (const models::StepTimes& t : r.step_times) mine.insert(mine.end(), {t.data_s, t.compute_s, t.wait_s, t.comm_s});
  RankTimes out;
  out.steps = r.step_times.size();
  std::vector<double> all(mine.size() * static_cast<size_t>(nranks));
  SB_MPI_CHECK(MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(),
                          static_cast<int>(mine.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD));
  for (size_t i = 0; i < all.size(); i += 4) {
    out.data.push_back(all[i]);
    out.compute.push_back(all[i + 1]);
    out.wait.push_back(all[i + 2]);
    out.comm.push_back(all[i + 3]);
  }
  return out;
}

// Per rank, the median over steps of compute, exposed wait and communication: where a slow rank
// (or a slow link) shows.
void print_rank_times(const RankTimes& t, int nranks) {
  if (nranks < 2 || t.steps == 0) return;
  auto median_row = [&](const std::vector<double>& all, int r) {
    return percentile(std::vector<double>(all.begin() + r * t.steps, all.begin() + (r + 1) * t.steps), 50) * 1e3;
  };
  std::printf("[ranks] median ms per step (compute / wait / comm):");
  for (int r = 0; r < nranks; ++r)
    std::printf(" r%d %.1f/%.1f/%.1f", r, median_row(t.compute, r), median_row(t.wait, r), median_row(t.comm, r));
  std::printf("\n");
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

void write_results(ResultsFile& file, const RunMetadata& metadata, const TrainOptions& o,
                   const models::TrainResult& r, double matmul_gflops, const RankTimes& times) {
  write_run_metadata(file.root(), metadata);
  const h5::Node train = file.root().create_group("train");
  write_config(train.create_group("config"), o.config);
  train.set_attr("dataset", r.dataset);
  train.set_attr("image_size", r.image_size);
  train.set_attr("parameters", r.parameter_count);
  train.set_attr("train_flops_per_image", r.train_flops_per_image);
  train.set_attr("reached_target", static_cast<int64_t>(r.reached_target));
  train.set_attr("time_to_target_s", r.time_to_target_s);
  train.set_attr("rank_hours_to_target", r.reached_target ? r.time_to_target_s * metadata.layout.nranks / 3600 : -1.0);
  train.set_attr("run_s", r.run_s);
  train.set_attr("steps", r.steps);
  train.set_attr("images_per_s", r.images_per_s);
  train.set_attr("model_gflops_per_s", r.images_per_s * r.train_flops_per_image / 1e9);
  train.set_attr("matmul_gflops_per_s", matmul_gflops);
  train.set_attr("skipped_samples", r.skipped_samples);
  train.set_attr("loss_scale_skipped_steps", r.loss_scale_skipped_steps);
  train.set_attr("loader_images_per_s", r.loader_images_per_s);
  train.set_attr("best_top1", r.best_top1);
  models::write_curve(train.create_group("curve"), r.curve);
  train.write("step_seconds", r.step_seconds);
  const std::vector<hsize_t> dims = {static_cast<hsize_t>(metadata.layout.nranks), times.steps};
  train.write("rank_data_s", times.data, dims);
  train.write("rank_compute_s", times.compute, dims);
  train.write("rank_wait_s", times.wait, dims);
  train.write("rank_comm_s", times.comm, dims);
  if (r.profiled_steps > 0) {
    const h5::Node ops = train.create_group("op_profile");
    ops.set_attr("profiled_steps", r.profiled_steps);
    std::vector<std::string> names;
    std::vector<int64_t> calls;
    std::vector<double> seconds;
    for (const models::OpTime& t : r.op_profile) {
      names.push_back(t.op);
      calls.push_back(t.calls);
      seconds.push_back(t.seconds);
    }
    ops.set_attr("ops", names);
    ops.write("calls", calls);
    ops.write("seconds", seconds);
  }
}

int run(int argc, char** argv, const WorldLayout& layout) {
  const bool root = layout.rank == 0;
  ProgramStart<TrainOptions> start = start_program<TrainOptions>(
      kProgram, "train", root, [&](bool print) { return parse_train_options(argc, argv, print); });
  if (start.failed) return kExitUsage;
  if (!start.options) return 0;
  const std::optional<TrainOptions>& parsed = start.options;
  std::unique_ptr<ResultsFile>& file = start.file;
  try {
    RunMetadata metadata = describe_run(kProgram, argc, argv);
    metadata.layout = layout;
    metadata.labels = parsed->labels;
    metadata.libraries.emplace_back("oneDNN", models::OnednnBackend::library_version());
    const bool on_gpu = parsed->config.backend == "cudnn";
#if SB_HAVE_CUDA
    if (on_gpu) metadata.libraries.emplace_back("cuDNN", models::CudnnBackend::library_version());
#endif
    if (root) warn_about_binding(parsed->config.threads, layout.local_size);
    // Bad data or settings fail alike on every rank (every rank reads the same files), so each
    // throws and reports the same line; rank 0 prints it.
    // A rank that hangs (or a peer lost without the launcher noticing) ends the job after
    // --timeout seconds without a finished step; the last checkpoint is whole (written atomically).
    Watchdog watchdog(parsed->timeout_seconds, root ? 0 : kTimeoutGraceSeconds,
                      [&](const std::string& reason) {
                        std::fprintf(stderr, "%s: %s; resume from the last checkpoint with --resume\n", kProgram,
                                     reason.c_str());
                      });
    // The matmul ceiling is measured first, while nothing else runs (the loader's threads would
    // share the cores), every rank at once as they will train.
    // (On a GPU the CPU's matmul is no ceiling: not measured, recorded as 0.)
    const double matmul = on_gpu ? 0.0 : models::OnednnBackend::matmul_gflops();
    const models::TrainResult result = models::train(parsed->config, root ? stdout : nullptr, MPI_COMM_WORLD,
                                                     [&](const std::string& phase) { watchdog.phase(phase); });
    const RankTimes times = gather_step_times(result, layout.nranks);
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
    print_rank_times(times, layout.nranks);
    print_op_profile(result);
    const double consumed = result.images_per_s / layout.nranks;
    std::printf("[loader] rank 0's %d workers alone: %.1f img/s, against %.1f img/s consumed per rank%s\n",
                parsed->config.workers, result.loader_images_per_s, consumed,
                result.loader_images_per_s < consumed ? ": the loader is the bottleneck (raise --workers)" : "");
    if (parsed->config.target_accuracy > 0) {
      if (result.reached_target)
        std::printf("[result] time to %.4f top-1: %.1f s (%.4f rank-hours)\n", parsed->config.target_accuracy,
                    result.time_to_target_s, result.time_to_target_s * layout.nranks / 3600);
      else
        std::printf("[result] target %.4f top-1 not reached (best %.4f) in %.1f s\n", parsed->config.target_accuracy,
                    result.best_top1, result.run_s);
    }
    write_results(*file, metadata, *parsed, result, matmul, times);
    file->commit();
    std::printf("# Complete results: %s\n", file->final_path().c_str());
    return 0;
  } catch (const UsageError& e) {
    if (root) std::fprintf(stderr, "%s: error: %s\n", kProgram, e.what());
    return kExitUsage;
  }
}

}  // namespace
}  // namespace sb

int main(int argc, char** argv) {
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
