#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "common/check.hpp"
#include "common/usage_error.hpp"
#include "results/buckets_record.hpp"
#include "results/micro_record.hpp"
#include "results/results_file.hpp"
#include "results/snapshot.hpp"
#include "tests/unit/temp_dir.hpp"

namespace sb {
namespace {

namespace fs = std::filesystem;

using Results = testing::TempDirTest;

TEST_F(Results, WriteThenReadBack) {
  const std::string file = path("run.h5");
  {
    ResultsFile out(file);
    EXPECT_FALSE(fs::exists(file)) << "visible under its final name before commit";
    out.root().set_attr("program", "sb-test");
    out.root().set_attr("ranks", int64_t{4});
    out.root().set_attr("ratio", 1.5);
    out.root().set_attr("hosts", std::vector<std::string>{"a", "node-long-name", ""});
    const h5::Node group = out.root().create_group("allreduce").create_group("mpi");
    group.write("size_bytes", std::vector<uint64_t>{8, 16, 32});
    group.write("time_us", std::vector<double>{1, 2, 3, 4, 5, 6}, {3, 2});
    group.write("wrong", std::vector<int64_t>{0, -1, 2});
    out.commit();
  }
  EXPECT_TRUE(fs::exists(file));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1)
      << "the temporary file was left behind";

  ResultsReader in(file);
  EXPECT_EQ(in.schema_version(), kSchemaVersion);
  EXPECT_EQ(in.root().attr_string("program"), "sb-test");
  EXPECT_EQ(in.root().attr_int("ranks"), 4);
  EXPECT_DOUBLE_EQ(in.root().attr_double("ratio"), 1.5);
  EXPECT_EQ(in.root().attr_strings("hosts"), (std::vector<std::string>{"a", "node-long-name", ""}));
  EXPECT_EQ(in.root().children(), std::vector<std::string>{"allreduce"});
  const h5::Node group = in.root().open_group("allreduce/mpi");
  EXPECT_EQ(group.read_ints("size_bytes"), (std::vector<int64_t>{8, 16, 32}));
  std::vector<hsize_t> dims;
  EXPECT_EQ(group.read_doubles("time_us", &dims), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(dims, (std::vector<hsize_t>{3, 2}));
  EXPECT_EQ(group.read_ints("wrong"), (std::vector<int64_t>{0, -1, 2}));
  EXPECT_EQ(group.children(), (std::vector<std::string>{"size_bytes", "time_us", "wrong"}));
}

TEST_F(Results, DroppedWithoutCommitLeavesNothing) {
  const std::string file = path("dropped.h5");
  {
    ResultsFile out(file);
    out.root().set_attr("program", "sb-test");
  }
  EXPECT_FALSE(fs::exists(file));
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(Results, AProcessKilledBeforeRenameIsNeverSeenAsComplete) {
  const std::string file = path("killed.h5");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ResultsFile out(file);
    out.root().create_group("allreduce").write("size_bytes", std::vector<uint64_t>{8});
    ::_exit(0);  // dies with the file open: no destructor, no commit
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_FALSE(fs::exists(file));
  std::vector<fs::path> left{fs::directory_iterator(dir_), fs::directory_iterator()};
  ASSERT_EQ(left.size(), 1u);
  EXPECT_NE(left[0].string().find(".tmp-"), std::string::npos);
  const std::string temporary = left[0].string();
  EXPECT_THROW(ResultsReader{temporary}, UsageError);
}

// sb-train's epoch snapshots: a second file for the same final name, built while the first is
// open, has its own temporary; each commit replaces what is under the final name, and the first
// file, committed last, is what stays.
TEST_F(Results, ATaggedFileBesideAnOpenOneReplacesTheFinalNameUntilTheLastCommit) {
  const std::string file = path("run.h5");
  ResultsFile final_one(file);
  for (int64_t epoch : {1, 2}) {
    ResultsFile snapshot(file, ResultsFile::Build::on_disk, ".snapshot");
    EXPECT_NE(snapshot.temporary_path(), final_one.temporary_path());
    snapshot.root().set_attr("epoch", epoch);
    snapshot.commit();
    EXPECT_EQ(ResultsReader(file).root().attr_int("epoch"), epoch);
  }
  final_one.root().set_attr("epoch", int64_t{3});
  final_one.commit();
  EXPECT_EQ(ResultsReader(file).root().attr_int("epoch"), 3);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1) << "a temporary was left behind";
}

// The programs' snapshots: each replaces the last under the final name with its status; one that
// fails (here its write throws, as a full disk makes it) is a line on stderr, not an exception,
// leaves no temporary, and the snapshot before it stays on disk and is the one named; none is
// tried after it.
TEST_F(Results, ASnapshotThatFailsLeavesTheOneBeforeIt) {
  const std::string file = path("run.h5");
  ResultsFile final_one(file);
  Snapshots snapshots("sb-test");
  EXPECT_FALSE(snapshots.any());
  EXPECT_EQ(snapshots.left_on_disk(), "");
  auto write_status = [](ResultsFile& f, const std::string& status) { f.root().set_attr("status", status); };
  ASSERT_TRUE(snapshots.save(final_one, "ring@mpi (1 of 3 sweeps)", write_status));
  EXPECT_EQ(ResultsReader(file).root().attr_string("status"),
            "snapshot after ring@mpi (1 of 3 sweeps): the run had not ended (a later save would have replaced this)");
  ::testing::internal::CaptureStderr();
  const bool saved = snapshots.save(final_one, "rd@mpi (2 of 3 sweeps)", [](ResultsFile&, const std::string&) {
    throw LibraryError("No space left on device");
  });
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(saved);
  EXPECT_EQ(said, "sb-test: the results after rd@mpi (2 of 3 sweeps) were not saved, nor will later ones be "
                  "(the run goes on): No space left on device\n");
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(snapshots.save(final_one, "tree@mpi (3 of 3 sweeps)", write_status)) << "a disk that refused one";
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "") << "one line says it, once";
  EXPECT_EQ(ResultsReader(file).root().attr_string("status").rfind("snapshot after ring@mpi (1 of 3", 0), 0u);
  EXPECT_EQ(snapshots.left_on_disk(), "the file there is the snapshot after ring@mpi (1 of 3 sweeps)");
  EXPECT_EQ(files().size(), 2u) << "the final file's temporary and the snapshot, and nothing else";
  final_one.root().set_attr("status", std::string("complete"));
  final_one.commit();
  EXPECT_EQ(ResultsReader(file).root().attr_string("status"), "complete");
  EXPECT_EQ(files().size(), 1u);
}

// A write the disk refuses (here a file-size limit, as a full disk would) throws one line with
// the system's reason and the file, and leaves neither the file nor its temporary behind, whether
// the file is built on disk or in memory.
TEST_F(Results, ARefusedWriteSaysWhyInOneLineAndLeavesNothing) {
  for (const ResultsFile::Build build : {ResultsFile::Build::on_disk, ResultsFile::Build::in_memory}) {
    SCOPED_TRACE(build == ResultsFile::Build::in_memory ? "in memory" : "on disk");
    const std::string file = path("limited.h5");
    const std::string message = testing::message_of_refused_write(
        [&] {
          ResultsFile out(file, build);
          out.root().write("big", std::vector<double>(1 << 17, 1.0));  // 1 MiB
          out.commit();
        },
        64 << 10);
    EXPECT_NE(message.find(std::strerror(EFBIG)), std::string::npos) << message;
    EXPECT_NE(message.find(file), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_TRUE(files().empty()) << "a file was left";
  }
}

// A file built in memory reads back as one built on disk does.
TEST_F(Results, BuiltInMemoryReadsBackTheSame) {
  const std::string file = path("memory.h5");
  {
    ResultsFile out(file, ResultsFile::Build::in_memory);
    out.root().set_attr("program", "sb-test");
    out.root().create_group("g").write("values", std::vector<double>{1, 2, 3});
    out.commit();
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1)
      << "the temporary file was left behind";
  ResultsReader in(file);
  EXPECT_EQ(in.schema_version(), kSchemaVersion);
  EXPECT_EQ(in.root().attr_string("program"), "sb-test");
  EXPECT_EQ(in.root().open_group("g").read_doubles("values"), (std::vector<double>{1, 2, 3}));
}

// The sec2 driver's description of a failed write (HDF5 1.10, its date's newline included).
TEST(Hdf5Reason, TheDriversReportBecomesItsReasonAndFile) {
  const std::string report =
      "file write failed: time = Fri Dec  4 00:03:13 2026\n, filename = '/mnt/checkpoint.h5.tmp-23521', "
      "file descriptor = 18, errno = 28, error message = 'No space left on device', buf = 0x557a63841130, "
      "total write size = 69088, bytes this sub-write = 69088, bytes actually written = 18446744073709551615, "
      "offset = 0";
  EXPECT_EQ(hdf5_reason(report), "file write failed: No space left on device ('/mnt/checkpoint.h5.tmp-23521')");
  EXPECT_EQ(hdf5_reason("unable to flush\ncache"), "unable to flush cache");
}

TEST_F(Results, ReaderRefusesWhatIsNotAResult) {
  EXPECT_THROW(ResultsReader{path("missing.h5")}, UsageError);
  std::ofstream(path("text.h5")) << "not hdf5\n";
  EXPECT_THROW(ResultsReader{path("text.h5")}, UsageError);
  {
    // An HDF5 file that is not ours: no schema_version.
    hid_t id = H5Fcreate(path("foreign.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(id, 0);
    H5Fclose(id);
  }
  EXPECT_THROW(ResultsReader{path("foreign.h5")}, UsageError);
}

// A byte flipped anywhere in the superblock or the root group's header: HDF5 opens such a file,
// then fails on its root (`H5Gopen2: not a group`), which sb-train's --resume reported as a fault
// (exit 3) rather than as a damaged file. The reader now opens it or refuses it as bad input.
TEST_F(Results, AFileDamagedAtItsRootIsBadInput) {
  {
    ResultsFile file(path("run.h5"));
    file.root().set_attr("program", "sb-test");
    file.commit();
  }
  std::ifstream in(path("run.h5"), std::ios::binary);
  const std::string whole((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  int refused = 0;
  for (size_t at = 0; at < std::min<size_t>(whole.size(), 1024); ++at) {
    std::string damaged = whole;
    damaged[at] = static_cast<char>(damaged[at] ^ 0xFF);
    std::ofstream(path("damaged.h5"), std::ios::binary | std::ios::trunc) << damaged;
    try {
      const ResultsReader reader(path("damaged.h5"));
    } catch (const UsageError&) {
      ++refused;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "byte " << at << ": " << e.what();
    }
  }
  EXPECT_GT(refused, 0);
}

TEST_F(Results, UnwritablePathIsBadInput) {
  EXPECT_THROW(ResultsFile{path("no/such/folder/run.h5")}, UsageError);
  EXPECT_TRUE(fs::is_empty(dir_));
}

// A folder is refused before any work, not when the finished file cannot be renamed onto it; and
// nothing is left in it.
TEST_F(Results, AFolderIsBadInput) {
  for (const std::string& folder : {dir_.string(), dir_.string() + "/"}) {
    try {
      ResultsFile file(folder);
      ADD_FAILURE() << "'" << folder << "' taken as a results file";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()), "cannot create '" + folder + "': Is a directory");
    }
  }
  EXPECT_TRUE(fs::is_empty(dir_));
}

// sb-micro's rows: one dataset per column, one per counter any row has, NaN where a row has
// none; a skipped benchmark keeps its error. And a run with no rows still writes its group.
TEST_F(Results, MicroRowsBecomeColumns) {
  const std::string file = path("micro.h5");
  {
    ResultsFile out(file);
    MicroRow memcpy_row{"BM_memcpy/262144/real_time", "", 200, 12.5, 12.0, 40.0, {{"x_memcpy", 1.0}}};
    MicroRow topk_row{"BM_topk/262144/10/real_time", "", 30, 800.0, 790.0, 5.0, {{"x_nth_element", 2.5}}};
    MicroRow skipped{"BM_cuda_memcpy/67108864/manual_time", "no GPU visible", 0, 0, 0, -1, {}};
    write_micro_results(out.root(), {memcpy_row, topk_row, skipped});
    out.commit();
  }
  ResultsReader in(file);
  const h5::Node micro = in.root().open_group("micro");
  EXPECT_EQ(micro.attr_strings("name"), (std::vector<std::string>{"BM_memcpy/262144/real_time", "BM_topk/262144/10/real_time",
                                                                  "BM_cuda_memcpy/67108864/manual_time"}));
  EXPECT_EQ(micro.attr_strings("error"), (std::vector<std::string>{"", "", "no GPU visible"}));
  EXPECT_EQ(micro.read_ints("iterations"), (std::vector<int64_t>{200, 30, 0}));
  EXPECT_EQ(micro.read_doubles("real_time_us"), (std::vector<double>{12.5, 800.0, 0}));
  EXPECT_EQ(micro.read_doubles("traffic_GBps"), (std::vector<double>{40.0, 5.0, -1}));
  const std::vector<double> x_memcpy = micro.read_doubles("x_memcpy"), x_nth = micro.read_doubles("x_nth_element");
  ASSERT_EQ(x_memcpy.size(), 3u);
  ASSERT_EQ(x_nth.size(), 3u);
  EXPECT_EQ(x_memcpy[0], 1.0);
  EXPECT_TRUE(std::isnan(x_memcpy[1]) && std::isnan(x_memcpy[2]));
  EXPECT_EQ(x_nth[1], 2.5);
  EXPECT_TRUE(std::isnan(x_nth[0]) && std::isnan(x_nth[2]));
  EXPECT_EQ(micro.children(), (std::vector<std::string>{"cpu_time_us", "iterations", "real_time_us", "traffic_GBps",
                                                        "x_memcpy", "x_nth_element"}));

  const std::string empty = path("empty.h5");
  {
    ResultsFile out(empty);
    write_micro_results(out.root(), {});
    out.commit();
  }
  ResultsReader none(empty);
  EXPECT_TRUE(none.root().open_group("micro").read_ints("iterations").empty());
  EXPECT_TRUE(none.root().open_group("micro").attr_strings("name").empty());
}

// Cycle sweeps' group names and titles: "cycle" alone, one per cycle time when there are several.
TEST(BucketsRecord, CycleSweepsAreNamedAndTitledForTheirCycleTime) {
  EXPECT_EQ(cycle_sweep_name(1, true, false), "cycle");
  EXPECT_EQ(cycle_sweep_name(1, true, true), "cycle@poll");
  EXPECT_EQ(cycle_sweep_name(0.5, false, false), "cycle-0.5ms");
  EXPECT_EQ(cycle_sweep_name(5, false, true), "cycle-5ms@poll");
  EXPECT_EQ(sweep_name(BucketStrategy::cycle, 5, false, true), "cycle-5ms@poll");
  EXPECT_EQ(sweep_name(BucketStrategy::ddp, 0, true, true), "ddp@poll");
  EXPECT_EQ(sweep_name(BucketStrategy::per_tensor, 0, true, false), "per-tensor");
  EXPECT_EQ(sweep_title("cycle", 1), "cycle (1 ms cycles)");
  EXPECT_EQ(sweep_title("cycle-0.5ms", 0.5), "cycle (0.5 ms cycles)");
  EXPECT_EQ(sweep_title("cycle-5ms@poll", 5), "cycle@poll (5 ms cycles)");
  EXPECT_EQ(sweep_title("per-tensor@poll", 0), "per-tensor@poll");
}

}  // namespace
}  // namespace sb
