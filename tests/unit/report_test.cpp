// sb-report's reading side: which files a campaign uses and which it skips (and why), the merge
// round trip, and the numbers the plot builders take from the files, including the scaling
// arithmetic on values chosen so that the expected speedup and efficiency are known exactly.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <tuple>

#include "common/check.hpp"
#include "common/usage_error.hpp"
#include "results/campaign.hpp"
#include "results/checksummed_group.hpp"
#include "results/merge.hpp"
#include "results/micro_record.hpp"
#include "results/report/gnuplot_files.hpp"
#include "results/report/label_placement.hpp"
#include "results/report/plot.hpp"
#include "results/report/run_trace.hpp"
#include "results/report/summary.hpp"
#include "results/results_file.hpp"
#include "tests/unit/temp_dir.hpp"

namespace sb {
namespace {

namespace fs = std::filesystem;

class Report : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    fs::create_directories(dir_ / "campaign");
  }

  // A minimal sb-allreduce file: one implementation, busbw and time per size.
  void write_allreduce(const std::string& name, int64_t ranks, const std::vector<double>& busbw,
                       const std::string& interconnect = "", int64_t schema = kSchemaVersion) {
    ResultsFile out(path(name));
    const h5::Node& root = out.root();
    root.set_attr("schema_version", schema);
    root.set_attr("program", "sb-allreduce");
    root.set_attr("ranks", ranks);
    if (schema >= 12) root.set_attr("run_id", "run-" + name);  // one per file, as a run has
    const h5::Node labels = root.create_group("labels");
    if (!interconnect.empty()) labels.set_attr("interconnect", interconnect);
    const h5::Node sweep = root.create_group("allreduce");
    sweep.set_attr("memcpy_GBps", 40.0);
    const h5::Node impl = sweep.create_group("ring@mpi");
    std::vector<uint64_t> sizes;
    std::vector<double> time;
    for (size_t i = 0; i < busbw.size(); ++i) {
      sizes.push_back(1024u << (2 * i));
      time.push_back(10.0 * static_cast<double>(i + 1));
    }
    impl.write("size_bytes", sizes);
    const h5::Node oop = impl.create_group("out_of_place");
    oop.write("busbw_GBps", busbw);
    oop.write("time_us", time);
    out.commit();
  }

  // Rewrites a file's bytes through `change`, as damage on a disk or in a copy would leave them.
  void rewrite_bytes(const std::string& name, const std::function<void(std::string& bytes)>& change) {
    std::string bytes;
    {
      std::ifstream in(path(name), std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    change(bytes);
    std::ofstream(path(name), std::ios::binary | std::ios::trunc) << bytes;
  }

  // An sb-micro file of these rows.
  void write_micro(const std::string& name, const std::vector<MicroRow>& rows) {
    ResultsFile out(path(name));
    out.root().set_attr("program", "sb-micro");
    out.root().set_attr("ranks", int64_t{1});
    out.root().create_group("labels");
    write_micro_results(out.root(), rows);
    out.commit();
  }

  // A minimal sb-train file: throughput, time to target and the batch that says strong or weak.
  // `status`: written when not empty, as sb-train writes it since schema 7.
  // `clock_s`: the curve's wall-clock times (schema 10), written when not empty.
  void write_train(const std::string& name, int64_t ranks, int64_t batch, double images_per_s, double tta_s,
                   const std::string& status = "", const std::vector<double>& clock_s = {}, int64_t resumes = 0,
                   const std::vector<double>& top1 = {0.8, 0.9}) {
    ResultsFile out(path(name));
    const h5::Node& root = out.root();
    root.set_attr("program", "sb-train");
    if (!status.empty()) root.set_attr("status", status);
    root.set_attr("ranks", ranks);
    root.create_group("labels");
    const h5::Node train = root.create_group("train");
    train.set_attr("dataset", "fashion-mnist");
    train.set_attr("image_size", int64_t{28});
    train.set_attr("images_per_s", images_per_s);
    train.set_attr("reached_target", int64_t{1});
    train.set_attr("time_to_target_s", tta_s);
    if (resumes > 0) train.set_attr("resumes", resumes);
    // Each rank's peak memory: 2 GB shared by the ranks, plus 0.1 GB more on each later rank.
    std::vector<int64_t> peaks;
    for (int64_t r = 0; r < ranks; ++r) peaks.push_back(2'000'000'000 / ranks + r * 100'000'000);
    train.write("rank_peak_host_bytes", peaks);
    // On a GPU (gpu_runs_): each rank's 10 GB of device memory, plus 1 GB more on each later rank.
    if (gpu_runs_) {
      std::vector<int64_t> device_peaks;
      for (int64_t r = 0; r < ranks; ++r) device_peaks.push_back(10'000'000'000 + r * 1'000'000'000);
      train.write("rank_peak_device_bytes", device_peaks);
    }
    const h5::Node config = train.create_group("config");
    config.set_attr("model", "resnet20");
    config.set_attr("batch", batch);
    config.set_attr("target_accuracy", 0.85);
    const h5::Node curve = train.create_group("curve");
    curve.write("epoch", std::vector<double>{1, 2});
    curve.write("wall_s", std::vector<double>{10, 20});
    curve.write("train_loss", std::vector<double>{1.0, 0.5});
    curve.write("top1", top1);
    if (!clock_s.empty()) curve.write("clock_s", clock_s);
    out.commit();
  }
  bool gpu_runs_ = false;  // write_train writes GPU runs, with their peak device memory
};

const report::Plot& find_plot(const std::vector<report::Plot>& plots, const std::string& name) {
  for (const report::Plot& plot : plots)
    if (plot.name == name) return plot;
  throw std::runtime_error("no plot named " + name);
}

bool has_plot(const std::vector<report::Plot>& plots, const std::string& name) {
  return std::any_of(plots.begin(), plots.end(), [&](const report::Plot& plot) { return plot.name == name; });
}

// The campaign skipped one file, `file`, for a reason that says `reason`.
void expect_one_skipped(const Campaign& campaign, const std::string& file, const std::string& reason) {
  ASSERT_EQ(campaign.skipped.size(), 1u);
  EXPECT_NE(campaign.skipped[0].path.find(file), std::string::npos) << campaign.skipped[0].path;
  EXPECT_NE(campaign.skipped[0].reason.find(reason), std::string::npos) << campaign.skipped[0].reason;
}

TEST_F(Report, FolderSkipsTruncatedOtherSchemaAndUnfinishedFilesAndNamesThem) {
  write_allreduce("campaign/good.h5", 2, {1, 2});
  write_allreduce("campaign/old.h5", 2, {1, 2}, "", 3);
  write_allreduce("campaign/cut.h5", 2, {1, 2});
  fs::resize_file(path("campaign/cut.h5"), fs::file_size(path("campaign/cut.h5")) / 3);
  std::ofstream(path("campaign/run.h5.tmp-123")) << "partial";
  std::ofstream(path("campaign/notes.txt")) << "not a results file, not even looked at";

  const Campaign campaign = load_campaign({path("campaign")});
  ASSERT_EQ(campaign.runs.size(), 1u);
  EXPECT_EQ(campaign.runs[0].name, "good");
  ASSERT_EQ(campaign.skipped.size(), 3u);  // in path order: cut, old, run.h5.tmp-123
  EXPECT_NE(campaign.skipped[0].path.find("cut.h5"), std::string::npos);
  EXPECT_NE(campaign.skipped[0].reason.find("truncated"), std::string::npos) << campaign.skipped[0].reason;
  EXPECT_NE(campaign.skipped[1].reason.find("schema_version 3"), std::string::npos) << campaign.skipped[1].reason;
  EXPECT_NE(campaign.skipped[2].reason.find("unfinished run"), std::string::npos) << campaign.skipped[2].reason;
}

// Damage that HDF5 reports (here the signature of a group's name heap, overwritten) is found when
// the file is read, in a child process, and the file is skipped with HDF5's reason; named alone,
// it is bad input. (Damage that crashes HDF5 takes the same path: IsolatedCall's tests.)
TEST_F(Report, AFileWithADamagedNameHeapIsSkippedWithTheReasonAndIsBadInputNamedAlone) {
  write_allreduce("campaign/good.h5", 2, {1, 2});
  write_allreduce("campaign/damaged.h5", 2, {1, 2});
  rewrite_bytes("campaign/damaged.h5", [](std::string& bytes) {
    // The last group written (out_of_place) has the last heap: opening the file and reading its
    // root's attributes does not reach it, only a full read (or a plot) does.
    const size_t last_heap = bytes.rfind("HEAP");
    ASSERT_NE(last_heap, std::string::npos) << "the file format changed: no local heap to damage";
    bytes.replace(last_heap, 4, "XXXX");
  });

  const Campaign campaign = load_campaign({path("campaign")});
  ASSERT_EQ(campaign.runs.size(), 1u);
  EXPECT_EQ(campaign.runs[0].name, "good");
  expect_one_skipped(campaign, "damaged.h5", "heap");
  EXPECT_THROW(load_campaign({path("campaign/damaged.h5")}), UsageError);
}

// A bit flipped in a measured value is no error to HDF5, and had been plotted: the file's seal
// finds it, and the file is skipped naming why; named alone, it is bad input.
TEST_F(Report, AFileWithAFlippedValueIsSkippedAndIsBadInputNamedAlone) {
  write_allreduce("campaign/good.h5", 2, {1, 2});
  write_allreduce("campaign/flipped.h5", 2, {1.2345678901234567, 2});
  rewrite_bytes("campaign/flipped.h5", [](std::string& bytes) {
    const double value = 1.2345678901234567;
    const size_t at = bytes.find(std::string(reinterpret_cast<const char*>(&value), sizeof value));
    ASSERT_NE(at, std::string::npos);
    bytes[at] = static_cast<char>(bytes[at] ^ 1);
  });

  const Campaign campaign = load_campaign({path("campaign")});
  ASSERT_EQ(campaign.runs.size(), 1u);
  EXPECT_EQ(campaign.runs[0].name, "good");
  expect_one_skipped(campaign, "flipped.h5", "does not match its checksum");
  EXPECT_THROW(load_campaign({path("campaign/flipped.h5")}), UsageError);
}

// A file that reads whole but lacks a dataset its plots need is skipped, named, before any plot
// is built; alone, it leaves no run, which is bad input.
TEST_F(Report, ARunLackingADatasetItsPlotsReadIsSkippedAndNamed) {
  write_allreduce("campaign/good.h5", 2, {1, 2});
  {
    ResultsFile out(path("campaign/no-times.h5"));
    const h5::Node& root = out.root();
    root.set_attr("schema_version", kSchemaVersion);
    root.set_attr("program", "sb-allreduce");
    root.set_attr("ranks", int64_t{2});
    root.create_group("labels");
    const h5::Node impl = root.create_group("allreduce").create_group("ring@mpi");
    impl.write("size_bytes", std::vector<uint64_t>{1024, 4096});
    impl.create_group("out_of_place").write("busbw_GBps", std::vector<double>{1, 2});  // no time_us
    out.commit();
  }
  Campaign campaign = load_campaign({path("campaign")});
  ASSERT_EQ(campaign.runs.size(), 2u);
  report::skip_unplottable_runs(campaign, {});
  ASSERT_EQ(campaign.runs.size(), 1u);
  EXPECT_EQ(campaign.runs[0].name, "good");
  expect_one_skipped(campaign, "no-times.h5", "time_us");

  Campaign alone = load_campaign({path("campaign/no-times.h5")});
  EXPECT_THROW(report::skip_unplottable_runs(alone, {}), UsageError);
}

// A curve shorter than its epochs (the plots read it with .at(), which threw past main).
TEST_F(Report, ARunWithADatasetShorterThanItsSizesIsSkippedAndNamed) {
  write_train("campaign/good.h5", 1, 128, 1000, 60);
  write_train("campaign/short-curve.h5", 1, 128, 1000, 60, "", {}, 0, {});
  Campaign campaign = load_campaign({path("campaign")});
  report::skip_unplottable_runs(campaign, {});
  ASSERT_EQ(campaign.runs.size(), 1u);
  EXPECT_EQ(campaign.runs[0].name, "good");
  expect_one_skipped(campaign, "short-curve.h5", "not what its program writes");
}

// Scaling plots step from the smallest rank count by doubling: a count of 0 never ended them.
TEST_F(Report, ARunWithoutAPositiveRankCountIsSkippedAndNamed) {
  write_train("campaign/a-good.h5", 2, 128, 1000, 60);
  write_train("campaign/b-good.h5", 4, 128, 1900, 35);
  write_train("campaign/no-ranks.h5", 0, 128, 1000, 60);
  const Campaign campaign = load_campaign({path("campaign")});
  ASSERT_EQ(campaign.runs.size(), 2u);
  expect_one_skipped(campaign, "no-ranks.h5", "ranks 0 is not a rank count");
}

TEST_F(Report, BadInputIsAUsageError) {
  write_allreduce("old.h5", 2, {1}, "", 3);
  std::ofstream(path("junk.h5")) << "junk";
  EXPECT_THROW(load_campaign({path("missing")}), UsageError);
  EXPECT_THROW(load_campaign({path("campaign")}), UsageError);  // empty folder: no runs
  EXPECT_THROW(load_campaign({path("junk.h5")}), UsageError);   // a named file must be usable
  EXPECT_THROW(load_campaign({path("old.h5")}), UsageError);
}

TEST_F(Report, MergedFileHoldsEveryRunAndReadsBackTheSame) {
  write_allreduce("campaign/a.h5", 2, {1, 2}, "ib");
  write_allreduce("campaign/b.h5", 4, {3, 4}, "eth");
  write_allreduce("campaign/old.h5", 4, {3, 4}, "", 2);
  const Campaign folder = load_campaign({path("campaign")});
  EXPECT_EQ(merge_campaign(folder, path("merged.h5")), 2u);

  const Campaign merged = load_campaign({path("merged.h5")});
  ASSERT_EQ(merged.runs.size(), 2u);
  ASSERT_EQ(merged.skipped.size(), 1u) << "the merge's skipped list is carried";
  EXPECT_NE(merged.skipped[0].reason.find("schema_version 2"), std::string::npos);
  EXPECT_NE(merged.runs[0].source.find("runs/sb-allreduce/ranks-2/interconnect=ib/a"), std::string::npos)
      << merged.runs[0].source;
  EXPECT_EQ(merged.runs[1].label("interconnect"), "eth");
  // Each run is copied whole: its own seal still sums its group (results/SCHEMA.md says so).
  for (const sb::Run& run : merged.runs) {
    ContentChecksum sum;
    run.root->sum_content(sum, h5::kContentChecksumAttr);
    EXPECT_EQ(sum.hex(), run.root->attr_string(h5::kContentChecksumAttr)) << run.source;
  }
  const auto from_folder = report::build_plots(folder.runs, {});
  const auto from_merge = report::build_plots(merged.runs, {});
  ASSERT_EQ(from_folder.size(), from_merge.size());
  for (size_t i = 0; i < from_folder.size(); ++i) {
    EXPECT_EQ(from_folder[i].name, from_merge[i].name);
    ASSERT_EQ(from_folder[i].series.size(), from_merge[i].series.size());
    for (size_t s = 0; s < from_folder[i].series.size(); ++s)
      EXPECT_EQ(from_folder[i].series[s].y, from_merge[i].series[s].y);
  }
}

// A merged file kept beside the files it was made from (sb-report --merge campaign/all.h5 campaign)
// counted each run twice. Each run is kept once, the first in path order; files from before
// run_id (schema 12) are all kept.
TEST_F(Report, ARunReadTwiceCountsOnce) {
  write_allreduce("campaign/a.h5", 2, {1, 2});
  write_allreduce("campaign/b.h5", 4, {3, 4});
  EXPECT_EQ(merge_campaign(load_campaign({path("campaign")}), path("campaign/all.h5")), 2u);
  fs::copy_file(path("campaign/a.h5"), path("a-copy.h5"));
  fs::create_directories(path("old"));
  write_allreduce("old/c.h5", 8, {5, 6}, "", 11);
  fs::copy_file(path("old/c.h5"), path("old/c-copy.h5"));

  const Campaign campaign = load_campaign({path("campaign"), path("a-copy.h5"), path("old")});
  ASSERT_EQ(campaign.runs.size(), 4u);
  EXPECT_EQ(campaign.runs[0].source, path("campaign/a.h5"));
  EXPECT_EQ(campaign.runs[1].source, path("campaign/all.h5") + ":/runs/sb-allreduce/ranks-4/no-labels/b");
  EXPECT_EQ(campaign.runs[2].source, path("old/c-copy.h5"));
  EXPECT_EQ(campaign.runs[3].source, path("old/c.h5"));
  ASSERT_EQ(campaign.repeated.size(), 3u);
  EXPECT_EQ(campaign.repeated[0].source, path("campaign/all.h5") + ":/runs/sb-allreduce/ranks-2/no-labels/a");
  EXPECT_EQ(campaign.repeated[0].same_as, path("campaign/a.h5"));
  EXPECT_EQ(campaign.repeated[1].source, path("campaign/b.h5"));
  EXPECT_EQ(campaign.repeated[1].same_as, campaign.runs[1].source);
  EXPECT_EQ(campaign.repeated[2].source, path("a-copy.h5"));
  EXPECT_TRUE(campaign.skipped.empty());
  EXPECT_EQ(campaign.run_files, (std::vector<std::string>{path("campaign/a.h5"), path("campaign/b.h5"), path("a-copy.h5"),
                                                          path("old/c-copy.h5"), path("old/c.h5")}));
}

TEST_F(Report, AllreducePlotsCarryTheFilesNumbersAndTheMemcpyCeiling) {
  write_allreduce("a.h5", 2, {1.5, 2.5, 3.5});
  const Campaign campaign = load_campaign({path("a.h5")});
  const auto plots = report::build_plots(campaign.runs, {});
  const report::Plot& busbw = find_plot(plots, "allreduce-busbw-np2");
  ASSERT_EQ(busbw.series.size(), 2u);
  EXPECT_EQ(busbw.series[0].title, "ring@mpi");
  EXPECT_EQ(busbw.series[0].x, (std::vector<double>{1024, 4096, 16384}));
  EXPECT_EQ(busbw.series[0].y, (std::vector<double>{1.5, 2.5, 3.5}));
  EXPECT_TRUE(busbw.series[1].reference);
  EXPECT_EQ(busbw.series[1].y, (std::vector<double>{40, 40}));
  EXPECT_EQ(find_plot(plots, "allreduce-latency-np2").series[0].y, (std::vector<double>{10, 20, 30}));
}

TEST_F(Report, AllreduceScalingIsRanksTimesBusbwOverTheSmallestScale) {
  // At 16K: 2 ranks 10 GB/s, 4 ranks 8 GB/s, 8 ranks 5 GB/s; the --by label splits nothing here.
  write_allreduce("campaign/np2.h5", 2, {1, 1, 10}, "ib");
  write_allreduce("campaign/np4.h5", 4, {1, 1, 8}, "ib");
  write_allreduce("campaign/np8.h5", 8, {1, 1, 5}, "ib");
  const Campaign campaign = load_campaign({path("campaign")});
  const auto plots = report::build_plots(campaign.runs, {"interconnect", 0});
  const report::Plot& speedup = find_plot(plots, "scaling-allreduce-speedup");
  ASSERT_EQ(speedup.series.size(), 2u);  // the line and the ideal
  EXPECT_EQ(speedup.series[0].title, "ring@mpi interconnect=ib");
  EXPECT_EQ(speedup.series[0].x, (std::vector<double>{2, 4, 8}));
  EXPECT_DOUBLE_EQ(speedup.series[0].y[1], 4 * 8 / 20.0);
  EXPECT_DOUBLE_EQ(speedup.series[0].y[2], 8 * 5 / 20.0);
  EXPECT_EQ(speedup.series[1].y, (std::vector<double>{1, 2, 4}));
  const report::Plot& efficiency = find_plot(plots, "scaling-allreduce-efficiency");
  EXPECT_DOUBLE_EQ(efficiency.series[0].y[1], 0.8);
  EXPECT_DOUBLE_EQ(efficiency.series[0].y[2], 0.5);
  // A chosen size that the runs have: 4K, where busbw is 1 everywhere: efficiency 1.
  const auto at_4k = report::build_plots(campaign.runs, {"", 4096});
  EXPECT_EQ(find_plot(at_4k, "scaling-allreduce-efficiency").series[0].y, (std::vector<double>{1, 1, 1}));
}

TEST_F(Report, TrainingScalingSaysStrongOrWeakFromTheBatches) {
  write_train("campaign/s1.h5", 1, 256, 100, 400);
  write_train("campaign/s2.h5", 2, 256, 180, 250);
  write_train("campaign/s2b.h5", 2, 256, 190, 210);  // a repeat: the median of 180 and 190 is taken
  const Campaign strong = load_campaign({path("campaign")});
  const auto plots = report::build_plots(strong.runs, {});
  const report::Plot& throughput = find_plot(plots, "scaling-train-throughput-speedup");
  EXPECT_NE(throughput.series[0].title.find("strong, global batch 256"), std::string::npos) << throughput.series[0].title;
  // Nearest-rank median of {180, 190} is 180.
  EXPECT_DOUBLE_EQ(throughput.series[0].y[1], 1.8);
  EXPECT_DOUBLE_EQ(find_plot(plots, "scaling-train-tta-speedup").series[0].y[1], 400.0 / 250.0);
  EXPECT_EQ(find_plot(plots, "train-top1-vs-time").series.size(), 4u);  // three runs and the target

  fs::remove_all(path("campaign"));
  fs::create_directories(path("campaign"));
  write_train("campaign/w1.h5", 1, 64, 100, 400);
  write_train("campaign/w4.h5", 4, 256, 300, 200);
  const auto weak = report::build_plots(load_campaign({path("campaign")}).runs, {});
  const report::Plot& eff = find_plot(weak, "scaling-train-throughput-efficiency");
  EXPECT_NE(eff.series[0].title.find("weak, batch 64 per rank"), std::string::npos) << eff.series[0].title;
  EXPECT_DOUBLE_EQ(eff.series[0].y[1], 3.0 / 4.0);
}

TEST_F(Report, TrainingMemoryIsTheLargestRanksPeakAtEachScale) {
  write_train("campaign/s1.h5", 1, 256, 100, 400);
  write_train("campaign/s4.h5", 4, 256, 300, 200);
  const auto plots = report::build_plots(load_campaign({path("campaign")}).runs, {});
  const report::Plot& memory = find_plot(plots, "scaling-train-memory");
  ASSERT_EQ(memory.series.size(), 1u);
  EXPECT_EQ(memory.series[0].x, (std::vector<double>{1, 4}));
  EXPECT_DOUBLE_EQ(memory.series[0].y[0], 2.0);
  EXPECT_DOUBLE_EQ(memory.series[0].y[1], 0.5 + 0.3) << "rank 3's: 2 GB / 4 + 3 x 0.1 GB";
  EXPECT_FALSE(has_plot(plots, "scaling-train-gpu-memory")) << "host runs have no device peak";
}

TEST_F(Report, GpuRunsAlsoPlotTheLargestRanksPeakGpuMemory) {
  gpu_runs_ = true;
  write_train("campaign/g1.h5", 1, 256, 100, 400);
  write_train("campaign/g2.h5", 2, 256, 190, 210);
  write_train("campaign/g8.h5", 8, 256, 700, 60);
  const auto plots = report::build_plots(load_campaign({path("campaign")}).runs, {});
  const report::Plot& gpu = find_plot(plots, "scaling-train-gpu-memory");
  ASSERT_EQ(gpu.series.size(), 1u);
  EXPECT_EQ(gpu.series[0].x, (std::vector<double>{1, 2, 8}));
  EXPECT_EQ(gpu.series[0].y, (std::vector<double>{10, 11, 17})) << "the last rank's: 10 GB + 1 GB a rank after 0";
  EXPECT_EQ(find_plot(plots, "scaling-train-memory").series.size(), 1u) << "and the host's beside it";
}

TEST_F(Report, TimeToAccuracyIsInWallClockTimeWithWhatResumesLost) {
  write_train("campaign/resumed.h5", 1, 256, 100, 400, "complete", {10, 27.5}, 1);  // 7.5 s lost before epoch 2
  write_train("campaign/older.h5", 2, 256, 180, 250);  // before schema 10: run time only
  const auto plots = report::build_plots(load_campaign({path("campaign")}).runs, {});
  const report::Plot& by_time = find_plot(plots, "train-top1-vs-time");
  ASSERT_EQ(by_time.series.size(), 3u);  // two runs (in path order) and the target
  EXPECT_EQ(by_time.series[0].title.substr(0, 5), "older");
  EXPECT_EQ(by_time.series[0].x, (std::vector<double>{10, 20}));
  EXPECT_EQ(by_time.series[1].title, "resumed (1 rank), resumed 1x");
  EXPECT_EQ(by_time.series[1].x, (std::vector<double>{10, 27.5}));
  EXPECT_EQ(by_time.series[2].x.back(), 27.5);  // the target line reaches the last point
}

// A run that ended early is read like the others and said to have ended early; one that ended
// before it measured a rate (images_per_s 0) is left out of the throughput scaling.
TEST_F(Report, ARunThatEndedEarlyIsMarkedAndOneWithoutARateIsLeftOutOfScaling) {
  write_train("campaign/s1.h5", 1, 256, 100, 400, "complete");
  write_train("campaign/s2.h5", 2, 256, 180, 250);  // before schema 7: no status, complete
  write_train("campaign/s4.h5", 4, 256, 0, 150, "interrupted by SIGTERM while training, step 1 done");
  const Campaign campaign = load_campaign({path("campaign")});
  ASSERT_EQ(campaign.runs.size(), 3u);
  EXPECT_EQ(campaign.runs[0].status, "complete");
  EXPECT_EQ(campaign.runs[1].status, "complete");
  EXPECT_EQ(campaign.runs[2].status, "interrupted by SIGTERM while training, step 1 done");
  const auto plots = report::build_plots(campaign.runs, {});
  EXPECT_EQ(find_plot(plots, "scaling-train-throughput-speedup").series[0].x, (std::vector<double>{1, 2}));
  EXPECT_EQ(find_plot(plots, "scaling-train-tta-speedup").series[0].x, (std::vector<double>{1, 2, 4}));
  report::write_summary(plots, campaign, dir_.string());
  std::ifstream summary(path("summary.txt"));
  const std::string text((std::istreambuf_iterator<char>(summary)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("s4.h5); ended early: interrupted by SIGTERM while training, step 1 done\n"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("s1.h5); ended early"), std::string::npos);
}

// sb-micro: each kernel is a category, numbered in the order the campaign first ran it, so that
// two runs line up; a kernel's value is its median aggregate where the run has one, else the
// median of its repetitions; a benchmark that did not run is left out, and the summary names the
// kernels.
TEST_F(Report, MicroKernelsLineUpAcrossRunsAtTheirMedians) {
  write_micro("campaign/a.h5", {{"BM_memcpy/262144/real_time", "", 10, 1, 1, 30, {{"x_memcpy", 1.0}}},
                                {"BM_triad/262144/real_time", "", 10, 1, 1, 20, {{"x_memcpy", 0.5}}},
                                {"BM_triad/262144/real_time", "", 10, 1, 1, 26, {{"x_memcpy", 0.7}}},
                                {"BM_triad/262144/real_time", "", 10, 1, 1, 24, {{"x_memcpy", 0.6}}},
                                {"BM_cuda_memcpy/67108864/manual_time", "no GPU visible", 0, 0, 0, -1, {}}});
  write_micro("campaign/b.h5", {{"BM_topk/262144/10/real_time", "", 5, 9, 9, 2, {{"x_nth_element", 3.0}}},
                                {"BM_triad/262144/real_time_mean", "", 10, 1, 1, 50, {{"x_memcpy", 0.9}}},
                                {"BM_triad/262144/real_time_median", "", 10, 1, 1, 40, {{"x_memcpy", 0.8}}}});
  const Campaign campaign = load_campaign({path("campaign")});
  const auto plots = report::build_plots(campaign.runs, {});
  const report::Plot& traffic = find_plot(plots, "micro-traffic");
  EXPECT_EQ(traffic.x_categories, (std::vector<std::string>{"memcpy/262144", "triad/262144", "topk/262144/10"}));
  ASSERT_EQ(traffic.series.size(), 2u);
  EXPECT_EQ(traffic.series[0].x, (std::vector<double>{1, 2}));
  EXPECT_EQ(traffic.series[0].y, (std::vector<double>{30, 24}));  // the median of 20, 26, 24
  EXPECT_EQ(traffic.series[1].x, (std::vector<double>{3, 2}));
  EXPECT_EQ(traffic.series[1].y, (std::vector<double>{2, 40}));  // the median aggregate, not the mean
  const report::Plot& ratio = find_plot(plots, "micro-x-memcpy");
  EXPECT_EQ(ratio.x_categories, (std::vector<std::string>{"memcpy/262144", "triad/262144"}));
  EXPECT_EQ(ratio.series[1].y, (std::vector<double>{0.8}));
  report::write_summary(plots, campaign, dir_.string());
  std::ifstream summary(path("summary.txt"));
  const std::string text((std::istreambuf_iterator<char>(summary)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("topk/262144/10                         2\n"), std::string::npos) << text;
}

// gnuplot exits 0 after a write that failed (a full disk), leaving the image cut short.
TEST_F(Report, AnImageIsWholeOnlyWithItsEnd) {
  const std::string png_end("IEND\xAE\x42\x60\x82", 8);
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name);
  };
  EXPECT_TRUE(report::image_is_whole(write("a.png", "\x89PNG...data...\0\0\0\0" + png_end)));
  EXPECT_FALSE(report::image_is_whole(write("b.png", "\x89PNG...data...\0\0\0\0IEND")));
  EXPECT_FALSE(report::image_is_whole(write("c.png", "")));
  EXPECT_TRUE(report::image_is_whole(write("a.svg", "<svg>\n<g/>\n</svg>\n\n")));
  EXPECT_FALSE(report::image_is_whole(write("b.svg", "<svg>\n<g/>\n</sv")));
  EXPECT_FALSE(report::image_is_whole(path("missing.png")));
}

// A key of long titles goes below the plot (beside it, it would squeeze the plot into a strip);
// a range from zero leaves room above an ideal line at its top.
TEST_F(Report, LongTitlesPutTheKeyBelowThePlot) {
  auto script = [&](const std::string& title) {
    report::Plot plot("p", "", "ranks", "efficiency", report::Scale::log2, report::Scale::linear);
    plot.series.emplace_back(title).add(1, 1);
    report::write_plot_script(plot, report::ImageFormats{}, dir_.string());
    std::ifstream in(path("p.gp"));
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string short_key = script("ring@shm");
  EXPECT_NE(short_key.find("set key outside right"), std::string::npos) << short_key;
  EXPECT_NE(short_key.find("set offsets 0, 0, graph 0.05, 0"), std::string::npos) << short_key;
  const std::string long_key = script("resnet20 fashion-mnist 28px mpi (strong, global batch 128)");
  EXPECT_NE(long_key.find("set key outside below"), std::string::npos) << long_key;
}

// Labels of points close together take different lines; far apart, each stays above its point.
// index.html links a run's trace from the report's folder: a relative path that still names the
// file when a folder's name has a space, a '#' (which would start a fragment) or a non-ASCII byte.
TEST(ReportLinks, ATraceIsLinkedRelativeToThePageWithOddBytesEscaped) {
  EXPECT_EQ(report::relative_href("/runs/one two/t#1.json", "/runs/report"), "../one%20two/t%231.json");
  EXPECT_EQ(report::relative_href("/runs/report/t.json", "/runs/report"), "t.json");
  EXPECT_EQ(report::relative_href("/runs/a/../b/\xc3\xa9?.json", "/runs/report/"), "../b/%C3%A9%3F.json");
}

TEST(ReportLabels, PointsCloseTogetherGetTheirLabelsOnDifferentLines) {
  report::Plot plot("p", "", "ratio", "speedup", report::Scale::log2, report::Scale::linear);
  report::Series& points = plot.series.emplace_back("compressors");
  for (auto [name, ratio, speedup] : {std::tuple{"topk", 50.0, 0.59}, {"threshold", 50.0, 0.59}, {"randomk", 100.0, 1.6},
                                      {"none", 1.0, 0.6}, {"sign", 32.0, 0.84}, {"onebit", 28.4, 0.86}}) {
    points.add(ratio, speedup);
    points.point_labels.push_back(name);
  }
  // onebit's label, just left of sign's and a little higher, clears it two lines down.
  EXPECT_EQ(report::label_lines(plot), (std::vector<std::vector<int>>{{0, 1, 0, 0, 0, 2}}));
  EXPECT_GT(report::label_line_offset(0), 0);  // above its point
  EXPECT_LT(report::label_line_offset(1), 0);  // below
}

TEST_F(Report, RenderingThatLeavesAnImageCutShortIsAFaultAndTheImageGoes) {
  // A stand-in for gnuplot that renders the first script's PNG whole and the second's cut short.
  const std::string fake = path("fake-gnuplot");
  std::ofstream(fake) << "#!/bin/sh\n"
                         "printf 'PNG\\0\\0\\0\\0IEND\\256\\102\\140\\202' > \"${1%.gp}.png\"\n"
                         "printf 'PNG\\0\\0' > \"${2%.gp}.png\"\n";
  fs::permissions(fake, fs::perms::owner_all);
  std::vector<report::Plot> plots;
  plots.emplace_back("whole", "", "", "", report::Scale::linear, report::Scale::linear);
  plots.emplace_back("cut", "", "", "", report::Scale::linear, report::Scale::linear);
  report::ImageFormats png_only;
  png_only.svg = false;
  try {
    report::render_plots(plots, png_only, dir_.string(), fake);
    FAIL() << "no error for an image cut short";
  } catch (const LibraryError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot write '" + path("cut.png") + "'"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(report::image_is_whole(path("whole.png")));
  EXPECT_FALSE(fs::exists(path("cut.png")));
}

}  // namespace
}  // namespace sb
