// sb-train: trains a ResNet on one process to a target accuracy (or for a number of epochs or
// steps) and reports MLPerf's time-to-accuracy, the per-epoch curve (loss, top-1, top-5,
// images/s), the training throughput against oneDNN's matmul FLOP rate measured in the same
// run, and the full configuration, to stdout and an HDF5 file (/train, results/SCHEMA.md).

#include <omp.h>
#include <sched.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "bench/train/options.hpp"
#include "common/check.hpp"
#include "common/mpi_env.hpp"
#include "common/usage_error.hpp"
#include "models/onednn_backend.hpp"
#include "models/trainer.hpp"
#include "results/results_file.hpp"
#include "results/run_metadata.hpp"

namespace sb {
namespace {

constexpr const char* kProgram = "sb-train";

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
}

void write_results(ResultsFile& file, const RunMetadata& metadata, const TrainOptions& o,
                   const models::TrainResult& r, double matmul_gflops) {
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
  train.set_attr("best_top1", r.best_top1);
  const h5::Node curve = train.create_group("curve");
  std::vector<double> epoch, wall, loss, rate, evaluated, top1, top5;
  for (const models::EpochRecord& e : r.curve) {
    epoch.push_back(static_cast<double>(e.epoch));
    wall.push_back(e.wall_s);
    loss.push_back(e.train_loss);
    rate.push_back(e.images_per_s);
    evaluated.push_back(e.evaluated);
    top1.push_back(e.evaluated ? e.top1 : NAN);
    top5.push_back(e.evaluated ? e.top5 : NAN);
  }
  curve.write("epoch", epoch);
  curve.write("wall_s", wall);
  curve.write("train_loss", loss);
  curve.write("images_per_s", rate);
  curve.write("evaluated", evaluated);
  curve.write("top1", top1);
  curve.write("top5", top5);
  train.write("step_seconds", r.step_seconds);
}

int run(int argc, char** argv, const WorldLayout& layout) {
  std::optional<TrainOptions> parsed;
  std::unique_ptr<ResultsFile> file;
  try {
    parsed = parse_train_options(argc, argv, true);
    if (!parsed) return 0;
    if (layout.nranks > 1)
      throw UsageError("sb-train runs on one rank for now (data-parallel training is the next issue); got " +
                       std::to_string(layout.nranks));
    if (parsed->out.empty()) parsed->out = default_results_path("train");
    file = std::make_unique<ResultsFile>(parsed->out);
    RunMetadata metadata = describe_run(kProgram, argc, argv);
    metadata.layout = layout;
    metadata.labels = parsed->labels;
    metadata.libraries.emplace_back("oneDNN", models::OnednnBackend::library_version());

    warn_about_binding(parsed->config.threads, layout.local_size);
    const models::TrainResult result = models::train(parsed->config, stdout);
    const double matmul = models::OnednnBackend::matmul_gflops();
    const double model_rate = result.images_per_s * result.train_flops_per_image / 1e9;
    std::printf("[throughput] %.2f img/s (median step, first excluded) = %.1f GFLOP/s of model FLOPs; "
                "oneDNN fp32 matmul 2048^3: %.1f GFLOP/s; %.0f%% of it\n",
                result.images_per_s, model_rate, matmul, 100 * model_rate / matmul);
    if (parsed->config.target_accuracy > 0) {
      if (result.reached_target)
        std::printf("[result] time to %.4f top-1: %.1f s (%.4f rank-hours)\n", parsed->config.target_accuracy,
                    result.time_to_target_s, result.time_to_target_s * layout.nranks / 3600);
      else
        std::printf("[result] target %.4f top-1 not reached (best %.4f) in %.1f s\n", parsed->config.target_accuracy,
                    result.best_top1, result.run_s);
    }
    write_results(*file, metadata, *parsed, result, matmul);
    file->commit();
    std::printf("# Complete results: %s\n", file->final_path().c_str());
    return 0;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s: error: %s\n", kProgram, e.what());
    return kExitUsage;
  }
}

}  // namespace
}  // namespace sb

int main(int argc, char** argv) {
  sb::MpiSession session(&argc, &argv);
  const sb::WorldLayout layout = sb::discover_world_layout();
  try {
    return sb::run(argc, argv, layout);
  } catch (const std::exception& e) {
    sb::die(__FILE__, __LINE__, std::string("sb-train: ") + e.what());
  }
}
