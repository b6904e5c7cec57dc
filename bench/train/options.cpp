#include "bench/train/options.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "collectives/allreduce_impl.hpp"
#include "collectives/compress/compressor.hpp"
#include "common/atomic_file.hpp"
#include "common/command_line.hpp"
#include "common/cpu_cores.hpp"
#include "common/distinct_files.hpp"
#include "common/text_fields.hpp"
#include "common/usage_error.hpp"
#include "models/resnet.hpp"
#include "results/run_metadata.hpp"

namespace sb {
namespace {
// A thousand times slower is past any straggler studied, and keeps its sleep far inside what a
// sleep can count.
constexpr double kMostStragglerFactor = 1000;

// The MLPerf log is written as the run goes, by rank 0 alone, and may be a device (/dev/null); a
// folder at its path, or no folder for it, is bad input that every rank finds here. Rank 0 alone
// finding it as it opened the log had left the other ranks waiting for it without end.
std::string why_no_log_at(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (fs::is_directory(path, error)) return "'" + path + "' is a folder";
  const fs::path folder = fs::path(path).parent_path();
  if (!folder.empty() && !fs::is_directory(folder, error))
    return "no folder '" + folder.string() + "' for '" + path + "'";
  return "";
}
}  // namespace

int auto_loader_workers(const std::string& backend, int cores) {
  if (backend != "cudnn") return 2;
  return std::clamp(cores - 1, 2, kMostAutoWorkers);
}

std::optional<TrainOptions> parse_train_options(int argc, char** argv, bool print) {
  TrainOptions o;
  models::TrainConfig& c = o.config;
  std::string optimizer = "sgd", decay = "cosine", strategy = "ddp", transport = "mpi", precision = "fp32",
              cudnn_search = "heuristic", momentum_correction = "auto";
  double bucket_mb = 0;  // --bucket-mb, when given
  int overlap = 1, error_feedback = 1;
  std::string straggler, resize, batch_schedule;
  std::vector<std::string> label_texts;
  const std::string models = join_list(models::resnet_names());
  CLI::App app("sb-train: trains a ResNet, data-parallel over the ranks of mpirun, to a target accuracy and\n"
               "reports the time it took (MLPerf's timing), the per-epoch curve and the training throughput.\n"
               "Every rank must be given the same flags; the paths of --data, --checkpoint, --out, --trace\n"
               "and --mllog, and --threads and --workers, may differ between nodes.",
               "sb-train");
  app.add_option("--model", c.model, "one of " + models + " [resnet20]");
  app.add_option("--data", c.data,
                 "fashion-mnist, synthetic[:SIZE], imagefolder:DIR, or a directory of IDX files [fashion-mnist]");
  app.add_option("--image-size", c.image_size, "imagefolder data: crop size in px [224]");
  app.add_option("--backend", c.backend, "onednn, cudnn (CUDA builds, one GPU), or reference (slow; for tests) [onednn]");
  app.add_option("--precision", precision, "cudnn: fp32, tf32, fp16 or bf16 (fp32 master weights) [fp32]");
  app.add_option("--cudnn-search", cudnn_search,
                 "cudnn: choose each convolution's algorithm by cuDNN's heuristics or by timing them [heuristic]");
  app.add_flag("--cuda-graph", c.cuda_graph,
               "cudnn: record each step (forward, loss, backward, gradient exchange, update) once as a CUDA graph and replay it");
  app.add_option("--profile-ops", c.profile_ops,
                 "time each op alone (the device waited for after it) in steps 2 to N + 1, and print where the "
                 "step's time goes, by op kind; those steps are left out of the throughput [0: off]");
  app.add_option("--trace", c.trace,
                 "write a Chrome trace (ui.perfetto.dev, chrome://tracing) of every rank's ops, phases and bucket "
                 "reductions in steps 2 to --trace-steps + 1 (host backends)");
  app.add_option("--trace-steps", c.trace_steps, "steps in the --trace [3]");
  app.add_option("--loss-scale", c.loss_scale,
                 "initial dynamic loss scale (1 to 2^24), halved on overflow (the step skipped), doubled after 2000 "
                 "clean steps [65536 under fp16, none otherwise]");
  app.add_option("--batch", c.batch, "global batch size [128]");
  app.add_option("--eval-batch", c.eval_batch, "evaluation batch size [500]");
  app.add_option("--epochs", c.epochs, "epochs at most [10]");
  app.add_option("--steps", c.max_steps, "stop after this many steps in all (throughput runs) [no limit]");
  app.add_option("--target-accuracy", c.target_accuracy, "stop at the first evaluation with top-1 >= this fraction");
  app.add_option("--eval-every", c.eval_every, "evaluate every this many epochs [1]");
  app.add_option("--optimizer", optimizer, "sgd, nesterov or lars [sgd]");
  app.add_option("--lr", c.base_lr, "learning rate per 256 images; the peak is lr x batch / 256 [0.2]");
  app.add_option("--momentum", c.optimizer.momentum, "[0.9]");
  app.add_option("--momentum-correction", momentum_correction,
                 "1: rescale the momentum by lr_t / lr_(t-1) at each step (Goyal et al.), the steps of PyTorch's SGD "
                 "at any schedule; 0: MXNet's and MLPerf's LARS's form [auto: 1 for sgd and nesterov, 0 for lars]");
  app.add_option("--weight-decay", c.optimizer.weight_decay, "[5e-5]");
  app.add_flag("--decay-bn-bias", c.optimizer.decay_bn_and_bias, "weight decay on BN parameters and biases too");
  app.add_option("--lars-eta", c.optimizer.lars_eta, "LARS trust coefficient [0.001]");
  app.add_option("--warmup-epochs", c.warmup_epochs, "linear warm-up length [0]");
  app.add_option("--lr-decay", decay, "cosine, poly (power 2) or step [cosine]");
  app.add_option("--label-smoothing", c.label_smoothing, "[0]");
  app.add_flag("--zero-init-residual", c.zero_init_residual, "start each residual block's last BN gamma at 0");
  app.add_option("--seed", c.seed, "initialisation, shuffling and augmentation seed [1]");
  app.add_option("--threads", c.threads, "compute threads [OMP_NUM_THREADS or all cores]");
  std::string workers = "auto";
  app.add_option("--workers", workers,
                 "data loader threads, or auto: 2 on the host, the rank's cores but one with --backend cudnn [auto]");
  app.add_option("--checkpoint", c.checkpoint_dir, "directory for checkpoint.h5 (written atomically)");
  app.add_option("--checkpoint-every", c.checkpoint_every, "epochs between checkpoints [1]");
  app.add_option("--checkpoint-steps", c.checkpoint_steps, "also checkpoint every this many steps [0: off]");
  app.add_flag("--resume", c.resume, "continue from the checkpoint in --checkpoint DIR");
  app.add_option("--print-every", c.print_every, "steps between progress lines; 0: none [50]");
  app.add_option("--algo", c.exchange.algorithm,
                 "gradient allreduce: mpi (MPI_Allreduce) or a schedule (ring, rd, rabenseifner, tree, dbtree, hier, "
                 "torus2d); with --backend cudnn, nccl (ncclAllReduce) or a schedule on the nccl transport [mpi; nccl on GPUs]");
  app.add_option("--transport", transport, "a schedule's transport: mpi or shm; nccl with --backend cudnn (its only one) [mpi]");
  app.add_option("--bucket-strategy", strategy,
                 "per-tensor, fixed (Horovod's, by size), cycle (Horovod's loop: what each cycle finds ready),\n"
                 "ddp (PyTorch) or partition [ddp]");
  const CLI::Option* bucket_mb_option =
      app.add_option("--bucket-mb", bucket_mb, "bucket size in MiB [fixed and cycle 128, ddp 25, partition 4]");
  std::string cycle_ms;
  app.add_option("--cycle-ms", cycle_ms, "cycle strategy: ms between its loop's cycles, 0.01 to 1000 [1]");
  app.add_option("--overlap", overlap, "1: reduce buckets while backward runs; 0: after it [1]");
  std::string progress = "thread";
  app.add_option("--progress", progress,
                 "overlapped buckets: thread (a communication thread) or poll (MPI_Iallreduce tested between layers;\n"
                 "--algo mpi, no --compressor) [thread]");
  app.add_option("--compressor", c.exchange.compressor,
                 "compress each gradient bucket: none, fp16, bf16, topk, threshold, randomk, sign, efsign, onebit, qsgd, terngrad, powersgd [none]");
  app.add_option("--ratio", c.exchange.compressor_params.ratio, "top-k, threshold and random-k: fraction of values sent [0.01]");
  app.add_option("--levels", c.exchange.compressor_params.levels, "QSGD's quantisation levels [16]");
  app.add_option("--qsgd-bucket", c.exchange.compressor_params.bucket, "QSGD: values that share a norm (0: one per bucket of gradients) [512]");
  app.add_option("--rank", c.exchange.compressor_params.rank, "PowerSGD's rank [4]");
  app.add_option("--error-feedback", error_feedback, "1: carry what compression drops into the next step [1]");
  app.add_option("--accumulate", c.accumulate, "micro-batches per step on each rank (gradient accumulation) [1]");
  app.add_option("--straggler", straggler, "RANK:FACTOR: that rank computes FACTOR times slower (it sleeps)");
  app.add_option("--resize-schedule", resize, "progressive resizing SIZE:EPOCH,... (0-based epochs), e.g. 128:0,224:16");
  app.add_option("--bn-span", c.bn_span,
                 "batch norm over groups of this many ranks (statistics and backward sums allreduced); 1: local [1]");
  app.add_flag("--balance", c.balance,
               "adapt each rank's share of the global batch to its measured speed every epoch, weighting the\n"
               "gradient average by the shares");
  app.add_option("--batch-schedule", batch_schedule,
                 "batch-size ramp BATCH:EPOCH,... (global; --batch before the first), the learning rate scaled with it");
  app.add_option("--mllog", c.mllog, "MLPerf-style log file (:::MLLOG lines)");
  app.add_option("-T,--timeout", o.timeout_seconds,
                 "seconds without a finished step before the job ends (a hung or lost rank) [600; 0 = never]");
  app.add_option("--out", o.out, "results file [out/train-<UTC time>-<pid>.h5]");
  app.add_option("--label", label_texts,
                 "key=value tag recorded in the results (repeatable); submission_org, submission_platform,\n"
                 "submission_division (closed, open) and submission_status set those --mllog keys too");
  c.base_lr = 0.2;
  if (!parse_command_line(app, argc, argv, print)) return std::nullopt;
  // Each node's own copy of the data and checkpoint folder, rank 0's outputs, each node's cores.
  o.flags = flags_to_agree(
      app, {"--out", "--label", "--data", "--checkpoint", "--trace", "--mllog", "--threads", "--workers"});
  c.optimizer.kind = models::parse_optimizer(optimizer);
  if (momentum_correction != "auto" && momentum_correction != "0" && momentum_correction != "1")
    throw UsageError("--momentum-correction is 0, 1 or auto, not '" + momentum_correction + "'");
  if (momentum_correction != "auto") c.optimizer.momentum_correction = momentum_correction == "1";
  c.decay = models::parse_decay(decay);
  c.bucket_strategy = parse_bucket_strategy(strategy);
  if (!cycle_ms.empty()) {
    if (c.bucket_strategy != BucketStrategy::cycle) throw UsageError("--cycle-ms is for --bucket-strategy cycle");
    const std::vector<double> cycles = parse_cycle_times(cycle_ms);
    if (cycles.size() != 1) throw UsageError("--cycle-ms: sb-train runs one cycle time, not " + cycle_ms);
    c.cycle_ms = cycles[0];
  }
  // Not given: the strategy's default (a negative one given had silently meant the same).
  c.bucket_mb = bucket_mb_option->count() > 0 ? bucket_mb : default_bucket_mb(c.bucket_strategy);
  if (c.bucket_strategy != BucketStrategy::per_tensor && c.bucket_mb <= 0)
    throw UsageError("--bucket-mb must be positive");
  if (overlap != 0 && overlap != 1) throw UsageError("--overlap must be 0 or 1");
  c.exchange.overlap = overlap == 1;
  c.exchange.progress = parse_progress(progress);
  if (c.exchange.progress == Progress::poll && (c.exchange.algorithm != "mpi" || c.exchange.compressor != "none"))
    throw UsageError("--progress poll posts MPI_Iallreduce: it needs --algo mpi and no --compressor");
  if (c.bucket_strategy == BucketStrategy::cycle) {
    if (c.exchange.compressor != "none")
      throw UsageError("--bucket-strategy cycle fuses other buckets every step, and --compressor keeps its error "
                       "feedback per bucket: compress with per-tensor, fixed, ddp or partition");
    if (c.exchange.progress == Progress::poll)
      throw UsageError("--bucket-strategy cycle runs Horovod's loop on a thread of its own: it takes --progress thread");
    if (c.backend == "cudnn")
      throw UsageError("--bucket-strategy cycle runs on the host exchange: with --backend cudnn use per-tensor, fixed, "
                       "ddp or partition");
  }
  if (!straggler.empty()) {
    const std::vector<std::string> fields = split_list(straggler, ':');
    const auto rank = fields.size() == 2 ? parse_whole_integer(fields[0]) : std::nullopt;
    const auto factor = fields.size() == 2 ? parse_whole_number(fields[1]) : std::nullopt;
    if (!rank || !factor) throw UsageError("--straggler wants RANK:FACTOR, e.g. 1:2.5, not '" + straggler + "'");
    // The straggler sleeps (factor - 1) times its compute each step. A factor of 1e308 overflowed
    // that sleep, which then did not sleep: the run recorded a straggler that never lagged.
    if (*rank < 0 || *rank > (1 << 30) || !(*factor >= 1 && *factor <= kMostStragglerFactor))
      throw UsageError("--straggler wants a rank >= 0 and a factor from 1 to 1000, not '" + straggler + "'");
    c.straggler_rank = static_cast<int>(*rank);
    c.straggler_factor = *factor;
  }
  if (!resize.empty()) c.resize_schedule = models::parse_resize_schedule(resize);
  if (!batch_schedule.empty()) c.batch_schedule = models::parse_batch_schedule(batch_schedule);
  if (error_feedback != 0 && error_feedback != 1) throw UsageError("--error-feedback must be 0 or 1");
  c.exchange.error_feedback = error_feedback == 1;
  make_compressor(c.exchange.compressor, c.exchange.compressor_params);  // checks the name and parameters
  if (transport == "mpi") c.exchange.impl.transport = Transport::mpi;
  else if (transport == "shm") c.exchange.impl.transport = Transport::shm;
  else if (transport != "nccl") throw UsageError("--transport must be mpi, shm or nccl, not '" + transport + "'");
  const AllreduceImplInfo* algo = find_allreduce_impl(c.exchange.algorithm);
  if (c.backend == "cudnn") {
    // On GPUs the gradients stay on the device: ncclAllReduce (--algo nccl, or the default mpi)
    // or a schedule on the nccl transport averages them.
    if (c.exchange.algorithm == "mpi") c.exchange.algorithm = "nccl";
    if (c.exchange.algorithm != "nccl" && !(algo && algo->algorithm))
      throw UsageError("--backend cudnn reduces gradients with --algo nccl or a schedule (ring, rd, ...) on the nccl "
                       "transport, not '" + c.exchange.algorithm + "'");
    if (transport == "shm") throw UsageError("--backend cudnn runs its schedules on the nccl transport, not shm");
    if (c.exchange.progress == Progress::poll) throw UsageError("--progress poll is for host training");
    c.exchange.impl.transport = Transport::nccl;
  } else {
    if (!algo || algo->memory == Memory::device)
      throw UsageError("unknown or device-only --algo '" + c.exchange.algorithm + "' (nccl needs --backend cudnn)");
    if (transport == "nccl") throw UsageError("--transport nccl needs --backend cudnn");
  }
  if (c.threads < 0) throw UsageError("--threads must not be negative");
  if (c.print_every < 0) throw UsageError("--print-every must not be negative (0: no progress lines)");
  if (o.timeout_seconds < 0) throw UsageError("--timeout must not be negative");
  if (workers == "auto") {
    c.workers = auto_loader_workers(c.backend, allowed_cores());
  } else {
    const std::optional<int64_t> count = parse_whole_integer(workers);
    if (!count || *count < 1 || *count > 1024)
      throw UsageError("--workers is auto or 1 to 1024 threads, not '" + workers + "'");
    c.workers = static_cast<int>(*count);
  }
  if (c.checkpoint_every < 1 || c.checkpoint_steps < 0) throw UsageError("--checkpoint-every must be at least 1");
  if (c.optimizer.momentum < 0 || c.optimizer.momentum >= 1) throw UsageError("--momentum is in [0, 1)");
  if (c.optimizer.weight_decay < 0) throw UsageError("--weight-decay must not be negative");
  // A trust coefficient of 0 or below makes LARS step by nothing, or against the gradient.
  if (!(c.optimizer.lars_eta > 0)) throw UsageError("--lars-eta must be positive");
  if (c.backend != "onednn" && c.backend != "reference" && c.backend != "cudnn")
    throw UsageError("unknown --backend '" + c.backend + "'");
  c.precision = models::parse_precision(precision);
  if (cudnn_search != "heuristic" && cudnn_search != "timed")
    throw UsageError("--cudnn-search is heuristic or timed, not '" + cudnn_search + "'");
  c.cudnn_timed_search = cudnn_search == "timed";
  if (c.backend != "cudnn" && c.precision != models::Precision::fp32)
    throw UsageError("--precision " + precision + " needs --backend cudnn (the CPU backends run fp32)");
  models::make_resnet_config(c.model, 1, 2, 28, 0);  // an unknown model is a usage error now
  for (const std::string& label : label_texts) add_label(o.labels, label);
  c.submission = models::mlperf_submission(o.labels);
  // The files it writes, one each: --out naming the checkpoint trained, then lost both (neither
  // could replace the other).
  require_distinct_files({{"--out", o.out},
                          {"--checkpoint", c.checkpoint_dir.empty() ? "" : models::checkpoint_path(c.checkpoint_dir)},
                          {"--mllog", c.mllog},
                          {"--trace", c.trace}});
  return o;
}

void check_rank0_outputs(const TrainOptions& o) {
  const models::TrainConfig& c = o.config;
  if (!c.trace.empty())
    if (const std::string why = why_not_writable(c.trace); !why.empty()) throw UsageError("--trace: " + why);
  if (!c.mllog.empty())
    if (const std::string why = why_no_log_at(c.mllog); !why.empty()) throw UsageError("--mllog: " + why);
}

}  // namespace sb
