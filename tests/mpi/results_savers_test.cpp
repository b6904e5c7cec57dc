// The results savers of sb-train, sb-buckets and sb-compress: the file is written once, complete
// at the end or partial with the reason a fault gives, whichever comes first, with what was
// finished when it was written; a fault before anything finished still leaves a file that says
// why the run ended.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "bench/buckets/results_saver.hpp"
#include "bench/compress/record.hpp"
#include "bench/train/record.hpp"
#include "results/results_file.hpp"

namespace sb {
namespace {

class ResultsSaverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    dir_ = std::filesystem::temp_directory_path() /
           ("sb-savers-" + std::to_string(::getpid()) + "-" + std::to_string(rank));
    std::filesystem::create_directories(dir_);
    char program[] = "sb-test";
    char* argv[] = {program, nullptr};
    metadata_ = describe_run("sb-test", 1, argv);
    metadata_.layout.nranks = 1;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
  RunMetadata metadata_;
  TrainOptions train_options_;
};

TEST_F(ResultsSaverTest, BucketsBeforeTheProfileHoldsTheRunAndWhyItEnded) {
  BucketsResultsSaver saver(std::make_unique<ResultsFile>(path("b.h5")), metadata_, BucketsSettings{});
  saver.save("timed out: no progress for 3 s while measuring the backward pass on rank 0");
  saver.save("complete");  // written once: this does nothing
  ResultsReader file(path("b.h5"));
  EXPECT_EQ(file.root().attr_string("status"), "timed out: no progress for 3 s while measuring the backward pass on rank 0");
  EXPECT_TRUE(file.root().has_attr("end_time_utc"));
  EXPECT_FALSE(file.root().has("buckets"));
}

TEST_F(ResultsSaverTest, BucketsKeepsTheRowsOfEachSweepInOrder) {
  BucketsResultsSaver saver(std::make_unique<ResultsFile>(path("b.h5")), metadata_, BucketsSettings{});
  BackwardProfile profile;
  profile.tensors = {{"fc.weight", 10}, {"fc.bias", 2}};
  profile.ready_s = {0.1, 0.2};
  profile.backward_s = 0.2;
  saver.set_profile(profile);
  BucketRow row;
  row.iteration_s = 1;
  saver.add("no-overlap", row);
  row.iteration_s = 2;
  saver.add("ddp", row);
  row.iteration_s = 3;
  saver.add("ddp", row);
  saver.save("interrupted by SIGTERM while measuring ddp at 4 MiB");
  ResultsReader file(path("b.h5"));
  EXPECT_EQ(file.root().open_group("buckets/no-overlap").read_doubles("iteration_s"), (std::vector<double>{1}));
  EXPECT_EQ(file.root().open_group("buckets/ddp").read_doubles("iteration_s"), (std::vector<double>{2, 3}));
}

TEST_F(ResultsSaverTest, CompressWritesConvergenceOnlyWhereTheCheckFinished) {
  CompressOptions options;
  CompressResultsSaver saver(std::make_unique<ResultsFile>(path("c.h5")), metadata_, options);
  CompressRow row;
  row.bytes = 1024;
  saver.start_compressor("none", Carrier::allreduce);
  saver.add_row(row);
  saver.start_compressor("topk", Carrier::allgather);
  saver.add_row(row);
  ConvergenceResult converged;
  converged.steps = 200;
  saver.add_convergence(0, converged);
  saver.save("interrupted by SIGTERM while checking topk's convergence");
  ResultsReader file(path("c.h5"));
  EXPECT_EQ(file.root().open_group("compress/none").attr_int("convergence_steps"), 200);
  EXPECT_FALSE(file.root().open_group("compress/topk").has_attr("convergence_steps"));
  EXPECT_EQ(file.root().open_group("compress/topk").read_doubles("speedup").size(), 1u);
}

// A fault saves what the run finished, says why, and leaves out what only every rank could give;
// the complete save that the ending run then attempts writes nothing over it.
TEST_F(ResultsSaverTest, TrainAPartialSaveSaysWhyAndIsTheOnlyOne) {
  models::TrainProgress progress;
  {
    TrainResultsSaver saver(std::make_unique<ResultsFile>(path("t.h5")), metadata_, train_options_);
    saver.save_partial(progress, "interrupted by SIGTERM while training, step 0 done");
    models::TrainResult complete;
    complete.steps = 99;
    saver.save_complete(metadata_, complete, RankRecords{});
  }
  ResultsReader file(path("t.h5"));
  EXPECT_EQ(file.root().attr_string("status"), "interrupted by SIGTERM while training, step 0 done");
  const h5::Node train = file.root().open_group("train");
  EXPECT_EQ(train.attr_int("steps"), 0);
  EXPECT_FALSE(train.has("rank_wait_s"));
  EXPECT_FALSE(train.has("rank_peak_host_bytes"));
  EXPECT_GT(train.attr_int("peak_host_bytes"), 0) << "rank 0's own peak needs no collective";
  EXPECT_TRUE(train.has("curve"));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_), std::filesystem::directory_iterator()), 1)
      << "no temporary left beside the file";
}

TEST_F(ResultsSaverTest, TrainACompleteSaveHasEveryRanksTimesAndPeakMemoryAndNoPartialOneFollows) {
  models::TrainProgress progress;
  {
    TrainResultsSaver saver(std::make_unique<ResultsFile>(path("t.h5")), metadata_, train_options_);
    models::TrainResult complete;
    complete.steps = 2;
    complete.step_seconds = {0.5, 0.25};
    RankRecords records;
    records.steps = 2;
    records.data = records.compute = records.wait = records.comm = {0.1, 0.2};
    records.negotiation = {0.05, 0.0};
    records.peak_host_bytes = {int64_t{3} << 30};
    saver.save_complete(metadata_, complete, records);
    saver.save_partial(progress, "interrupted by SIGTERM while exiting");
  }
  ResultsReader file(path("t.h5"));
  EXPECT_EQ(file.root().attr_string("status"), "complete");
  const h5::Node train = file.root().open_group("train");
  EXPECT_EQ(train.attr_int("steps"), 2);
  EXPECT_EQ(train.read_doubles("rank_wait_s"), (std::vector<double>{0.1, 0.2}));
  EXPECT_EQ(train.read_doubles("rank_negotiation_s"), (std::vector<double>{0.05, 0.0}));
  EXPECT_EQ(train.read_ints("rank_peak_host_bytes"), (std::vector<int64_t>{int64_t{3} << 30}));
  EXPECT_EQ(train.attr_int("peak_host_bytes"), int64_t{3} << 30) << "rank 0's, as gathered";
  EXPECT_FALSE(train.has_attr("peak_device_bytes")) << "a host run has no device";
  EXPECT_FALSE(train.has("rank_peak_device_bytes"));
}

TEST_F(ResultsSaverTest, TrainOnAGpuSavesEachRanksPeakDeviceMemory) {
  {
    TrainResultsSaver saver(std::make_unique<ResultsFile>(path("t.h5")), metadata_, train_options_);
    models::TrainResult complete;
    complete.peak_device_bytes = int64_t{1} << 30;  // rank 0's own, which the gathered one replaces
    RankRecords records;
    records.peak_host_bytes = {int64_t{3} << 30, int64_t{2} << 30};
    records.peak_device_bytes = {int64_t{9} << 30, int64_t{8} << 30};
    saver.save_complete(metadata_, complete, records);
  }
  ResultsReader file(path("t.h5"));
  const h5::Node train = file.root().open_group("train");
  EXPECT_EQ(train.read_ints("rank_peak_device_bytes"), (std::vector<int64_t>{int64_t{9} << 30, int64_t{8} << 30}));
  EXPECT_EQ(train.attr_int("peak_device_bytes"), int64_t{9} << 30) << "rank 0's, as gathered";
}

// Every rank's peaks reach rank 0 in rank order; a run whose ranks saw no device gathers none.
TEST_F(ResultsSaverTest, TrainGathersEveryRanksPeaksOnRankZero) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  models::TrainResult mine;
  mine.peak_device_bytes = int64_t{rank + 1} << 30;
  const RankRecords gathered = gather_rank_records(mine, int64_t{rank + 1} << 20, ranks);
  models::TrainResult on_host;
  const RankRecords host = gather_rank_records(on_host, 1 << 20, ranks);
  if (rank != 0) return;
  std::vector<int64_t> host_peaks, device_peaks;
  for (int64_t r = 1; r <= ranks; ++r) host_peaks.push_back(r << 20), device_peaks.push_back(r << 30);
  EXPECT_EQ(gathered.peak_host_bytes, host_peaks);
  EXPECT_EQ(gathered.peak_device_bytes, device_peaks);
  EXPECT_EQ(host.peak_host_bytes, std::vector<int64_t>(static_cast<size_t>(ranks), 1 << 20));
  EXPECT_TRUE(host.peak_device_bytes.empty());
}

// Without a save the temporary file goes with the saver (bad input found after the start).
TEST_F(ResultsSaverTest, TrainAnUnsavedFileLeavesNothing) {
  { TrainResultsSaver saver(std::make_unique<ResultsFile>(path("t.h5")), metadata_, train_options_); }
  EXPECT_TRUE(std::filesystem::is_empty(dir_));
}

}  // namespace
}  // namespace sb
