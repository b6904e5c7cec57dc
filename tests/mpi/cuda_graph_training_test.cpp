// sb-train --cuda-graph against the same run uncaptured, where every rank has a GPU (skipped
// elsewhere); with several ranks the recording holds the gradient exchange's NCCL calls too. A
// replay runs the recorded kernels on the same tensors, and the uncaptured GPU steps are
// deterministic (CudnnLayers.RepeatedTrainingStepsAreBitIdentical), so the weights must come out
// the same bits. Two epochs with an evaluation between them, at an evaluation batch unlike
// the training one: the evaluation reshapes, so reallocates, the model's tensors, and the second
// epoch must record afresh instead of replaying addresses that were freed.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "models/trainer.hpp"
#include "results/results_file.hpp"
#include "tests/mpi/gpu_ranks.hpp"

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

TEST(CudaGraphTraining, ReplayedStepsGiveTheWeightsOfUncapturedOnes) {
  if (!gpu_on_every_rank()) GTEST_SKIP() << "not every rank has a GPU";
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  // One folder for all ranks, named by rank 0.
  char dir_name[64] = "/tmp/sb-cuda-graph-XXXXXX";
  if (rank == 0 && mkdtemp(dir_name) == nullptr) dir_name[0] = 0;
  MPI_Bcast(dir_name, sizeof dir_name, MPI_CHAR, 0, MPI_COMM_WORLD);
  ASSERT_NE(dir_name[0], 0) << "no temporary folder";
  const std::filesystem::path dir = dir_name;
  if (rank == 0) {
    write_data(dir, "train", 240);
    write_data(dir, "t10k", 120);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  for (Precision precision : {Precision::fp32, Precision::fp16}) {
    std::vector<std::vector<float>> weights;
    std::vector<TrainResult> results;
    for (bool graph : {false, true}) {
      const std::filesystem::path checkpoint = dir / (precision_name(precision) + (graph ? "-graph" : "-eager"));
      if (rank == 0) std::filesystem::create_directories(checkpoint);
      MPI_Barrier(MPI_COMM_WORLD);
      TrainConfig c;
      c.model = "resnet20";
      c.data = dir.string();
      c.backend = "cudnn";
      c.precision = precision;
      c.cuda_graph = graph;
      c.batch = 60;        // 4 steps an epoch, shared by 1 to 5 ranks
      c.eval_batch = 120;  // another shape than training's
      c.epochs = 2;
      c.workers = 1;
      c.print_every = 0;
      c.seed = 5;
      c.checkpoint_dir = checkpoint.string();
      std::FILE* log = std::tmpfile();  // rank 0's progress lines
      ASSERT_NE(log, nullptr);
      results.push_back(train(c, rank == 0 ? log : nullptr, MPI_COMM_WORLD));
      const int recordings = lines_starting(log, "[cuda-graph]");
      std::fclose(log);
      // fp32: steps 2 and 6 record (1 and 5 run uncaptured first); fp16's loss scale may change
      // and be recorded afresh.
      if (rank == 0) {
        if (!graph) {
          EXPECT_EQ(recordings, 0);
        } else if (precision == Precision::fp32) {
          EXPECT_EQ(recordings, 2);
        } else {
          EXPECT_GE(recordings, 2);
        }
        weights.push_back(parameters_in(checkpoint.string()));
      }
    }
    if (rank == 0) {
      EXPECT_EQ(weights[0], weights[1]) << precision_name(precision);
    }
    ASSERT_EQ(results[0].curve.size(), 2u);
    ASSERT_EQ(results[1].curve.size(), 2u);
    for (size_t e = 0; e < 2; ++e) {
      EXPECT_EQ(results[0].curve[e].train_loss, results[1].curve[e].train_loss) << precision_name(precision);
      EXPECT_EQ(results[0].curve[e].top1, results[1].curve[e].top1) << precision_name(precision);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sb::models
