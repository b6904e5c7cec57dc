// sb-train --cuda-graph against the same run uncaptured: on GPUs where every rank has one (skipped
// elsewhere; with several ranks the recording holds the gradient exchange's NCCL calls too), and
// on the host over the recording emulation, which runs everywhere. A replay runs the recorded
// ops on the same tensors, and the uncaptured steps are deterministic (on GPUs too:
// Cudnn/BackendConformance.RepeatedTrainingStepsAreBitIdentical), so the weights must come out the same bits.
// Two epochs with an evaluation between them, at an evaluation batch unlike the training one: the
// evaluation reshapes, so reallocates, the model's tensors, and the second epoch must record
// afresh instead of replaying addresses that were freed.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "models/trainer.hpp"
#include "results/results_file.hpp"
#include "tests/mpi/gpu_ranks.hpp"
#include "tests/mpi/small_runs.hpp"

namespace sb::models {
namespace {

// An uncompressed IDX file of unsigned bytes: the magic number, the extents, the values.
void write_idx(const std::filesystem::path& path, const std::vector<uint32_t>& extents,
               const std::vector<unsigned char>& values) {
  std::ofstream out(path, std::ios::binary);
  const unsigned char magic[4] = {0, 0, 0x08, static_cast<unsigned char>(extents.size())};
  out.write(reinterpret_cast<const char*>(magic), 4);
  for (uint32_t e : extents) {
    const unsigned char big_endian[4] = {static_cast<unsigned char>(e >> 24), static_cast<unsigned char>(e >> 16),
                                         static_cast<unsigned char>(e >> 8), static_cast<unsigned char>(e)};
    out.write(reinterpret_cast<const char*>(big_endian), 4);
  }
  out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size()));
}

// A small IDX data set of 16 x 16 images in 10 classes, the label written into the pixels.
void write_data(const std::filesystem::path& dir, const std::string& split, uint32_t count) {
  std::vector<unsigned char> images(count * 256), labels(count);
  for (uint32_t n = 0; n < count; ++n) {
    labels[n] = static_cast<unsigned char>(n * 7 % 10);
    for (uint32_t i = 0; i < 256; ++i) images[n * 256 + i] = static_cast<unsigned char>((n * 31 + i * labels[n]) % 251);
  }
  write_idx(dir / (split + "-images-idx3-ubyte"), {count, 16, 16}, images);
  write_idx(dir / (split + "-labels-idx1-ubyte"), {count}, labels);
}

std::vector<float> parameters_in(const std::string& checkpoint_dir) {
  ResultsReader reader(checkpoint_path(checkpoint_dir));
  const h5::Node node = reader.root().open_group("checkpoint/parameters");
  std::vector<float> all;
  for (const std::string& name : node.children()) {
    std::vector<float> t = node.read_floats(name);
    all.insert(all.end(), t.begin(), t.end());
  }
  return all;
}

int lines_starting(std::FILE* log, const std::string& prefix) {
  std::rewind(log);
  char line[1024];
  int found = 0;
  while (std::fgets(line, sizeof line, log)) found += std::string(line).rfind(prefix, 0) == 0;
  return found;
}

// Trains twice on `backend`, uncaptured and with --cuda-graph, and expects the same weights,
// losses and accuracies bit for bit, and the recordings where they belong (a new loss scale needs
// none: the recording reads it from the device). With a loss scale, overflows are injected at
// steps 1, 2, 3, 5 and 7. With `accumulate` micro-batches a step, the recording holds them all.
// Collective. Returns the steps skipped for overflowed gradients (the same in both runs).
int64_t expect_recorded_run_like_uncaptured(const std::string& backend, Precision precision,
                                            OptimizerKind optimizer = OptimizerKind::sgd, double loss_scale = 0,
                                            int64_t accumulate = 1) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::filesystem::path dir = shared_temp_dir("sb-cuda-graph");
  if (dir.empty()) {
    ADD_FAILURE() << "no temporary folder";
    return -1;
  }
  if (rank == 0) {
    write_data(dir, "train", 240);
    write_data(dir, "t10k", 120);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const std::string what = backend + " " + precision_name(precision) + " " + optimizer_name(optimizer) +
                           (loss_scale > 0 ? " loss scale " + std::to_string(loss_scale) : "") +
                           (accumulate > 1 ? " accumulate " + std::to_string(accumulate) : "");
  std::vector<std::vector<float>> weights;
  std::vector<TrainResult> results;
  for (bool graph : {false, true}) {
    const std::filesystem::path checkpoint = dir / (graph ? "graph" : "uncaptured");
    if (rank == 0) std::filesystem::create_directories(checkpoint);
    MPI_Barrier(MPI_COMM_WORLD);
    TrainConfig c;
    c.model = "resnet20";
    c.data = dir.string();
    c.backend = backend;
    c.precision = precision;
    c.optimizer.kind = optimizer;
    c.cuda_graph = graph;
    c.loss_scale = loss_scale;
    if (loss_scale > 0) c.inject_overflow_steps = {1, 2, 3, 5, 7};
    c.accumulate = accumulate;
    c.batch = 60;        // 4 steps an epoch, shared by 1 to 5 ranks
    c.eval_batch = 120;  // another shape than training's
    c.epochs = 2;
    c.threads = 1;
    c.workers = 1;
    c.print_every = 0;
    c.seed = 5;
    c.checkpoint_dir = checkpoint.string();
    std::FILE* log = std::tmpfile();  // rank 0's progress lines
    if (log == nullptr) {
      ADD_FAILURE() << "no temporary file";
      return -1;
    }
    results.push_back(train(c, rank == 0 ? log : nullptr, MPI_COMM_WORLD));
    const int recordings = lines_starting(log, "[cuda-graph]");
    std::fclose(log);
    // Steps 2 and 6 record (1 and 5 run uncaptured first), whatever the loss scale does.
    if (rank == 0) {
      EXPECT_EQ(recordings, graph ? 2 : 0) << what;
      weights.push_back(parameters_in(checkpoint.string()));
    }
  }
  if (rank == 0) {
    EXPECT_EQ(weights[0], weights[1]) << what;
  }
  EXPECT_EQ(results[0].curve.size(), 2u) << what;
  EXPECT_EQ(results[1].curve.size(), 2u) << what;
  for (size_t e = 0; e < std::min(results[0].curve.size(), results[1].curve.size()); ++e) {
    EXPECT_EQ(results[0].curve[e].train_loss, results[1].curve[e].train_loss) << what;
    EXPECT_EQ(results[0].curve[e].top1, results[1].curve[e].top1) << what;
  }
  EXPECT_EQ(results[0].loss_scale_skipped_steps, results[1].loss_scale_skipped_steps) << what;
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) std::filesystem::remove_all(dir);
  return results[1].loss_scale_skipped_steps;
}

// On the GPU: real CUDA graphs, with the gradient exchange's NCCL calls at several ranks.
TEST(CudaGraphTraining, ReplayedStepsGiveTheWeightsOfUncapturedOnes) {
  if (!gpu_on_every_rank()) GTEST_SKIP() << "not every rank has a GPU";
  for (Precision precision : {Precision::fp32, Precision::fp16}) expect_recorded_run_like_uncaptured("cudnn", precision);
  expect_recorded_run_like_uncaptured("cudnn", Precision::bf16, OptimizerKind::lars);
  // fp16 with overflows injected into uncaptured and recorded steps, from a loss scale (1024) too
  // small to overflow by itself.
  EXPECT_EQ(expect_recorded_run_like_uncaptured("cudnn", Precision::fp16, OptimizerKind::sgd, 1024), 5);
  // Three micro-batches a step, where the batch of 60 divides into them on every rank.
  int ranks = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (60 % (ranks * 3) == 0) expect_recorded_run_like_uncaptured("cudnn", Precision::bf16, OptimizerKind::sgd, 0, 3);
}

// Everywhere: the trainer's recording logic over oneDNN with recording emulated on the host
// (models/recording_backend.hpp), which fails a replay that outlives one of its tensors. One rank:
// the host exchange cannot be recorded.
TEST(CudaGraphTraining, RecordingLogicGivesTheWeightsOfUncapturedStepsOnTheHost) {
  int ranks = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (ranks != 1) GTEST_SKIP() << "the host gradient exchange cannot be recorded";
  for (OptimizerKind optimizer : {OptimizerKind::sgd, OptimizerKind::lars})
    expect_recorded_run_like_uncaptured("recording:onednn", Precision::fp32, optimizer);
}

// --accumulate: three micro-batches a step, each reading its own input tensor, their gradients
// summed and averaged, all in one recording; with loss scaling too, so that an overflow in any
// micro-batch skips the step.
TEST(CudaGraphTraining, RecordedMicroBatchesGiveTheWeightsOfUncapturedOnesOnTheHost) {
  int ranks = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (ranks != 1) GTEST_SKIP() << "the host gradient exchange cannot be recorded";
  expect_recorded_run_like_uncaptured("recording:onednn", Precision::fp32, OptimizerKind::lars, 0, 3);
  EXPECT_EQ(expect_recorded_run_like_uncaptured("recording:onednn", Precision::fp32, OptimizerKind::sgd, 1024, 3), 5);
}

// Loss scaling recorded with the step (at fp32 here, which the host backends run): overflows
// injected at uncaptured steps (1 and 5: the host decides) and at recorded ones (2: the recording
// step, 3 and 7: replays), which the recorded update must skip on its own. The scale halves at
// each, and the recording is kept.
TEST(CudaGraphTraining, RecordedStepsSkipOverflowsAsTheHostDoes) {
  int ranks = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (ranks != 1) GTEST_SKIP() << "the host gradient exchange cannot be recorded";
  EXPECT_EQ(expect_recorded_run_like_uncaptured("recording:onednn", Precision::fp32, OptimizerKind::sgd, 1024), 5);
}

}  // namespace
}  // namespace sb::models
