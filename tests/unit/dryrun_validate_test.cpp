// sb-dryrun validate re-predicts each measured run from the run's own figures (ranks, counts,
// segment, tensor sizes). A run holding figures its program never writes (a damaged or edited
// file) is skipped and named, before the simulator is asked to run them, and the rest of the
// campaign is still validated. (A count of 2^63 or one-byte segments kept validate busy for good.)
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "bench/dryrun/commands.hpp"
#include "common/usage_error.hpp"
#include "results/results_file.hpp"
#include "tests/unit/temp_dir.hpp"

namespace sb {
namespace {

class DryrunValidate : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    std::filesystem::create_directories(dir_ / "campaign");
    std::ofstream(path("flat.machine")) << "name flat\n"
                                           "level node size 0 alpha 1us bandwidth 10GB/s\n"
                                           "gamma float 10GB/s\n"
                                           "copy 10GB/s\n";
  }

  // A 2-rank sb-allreduce file of ring@mpi at 64 KiB and 1 MiB of floats.
  void write_allreduce(const std::string& name, int64_t segment_bytes, std::vector<uint64_t> counts,
                       const std::string& torus = "2x1") {
    ResultsFile out(path("campaign/" + name));
    const h5::Node& root = out.root();
    root.set_attr("schema_version", kSchemaVersion);
    root.set_attr("program", "sb-allreduce");
    root.set_attr("ranks", int64_t{2});
    root.create_group("labels");
    const h5::Node sweep = root.create_group("allreduce");
    sweep.set_attr("datatype", "float");
    sweep.set_attr("torus", torus);
    sweep.set_attr("segment_bytes", segment_bytes);
    sweep.set_attr("node_size", int64_t{2});
    const h5::Node ring = sweep.create_group("ring@mpi");
    ring.set_attr("implementation", "ring");
    ring.set_attr("transport", "mpi");
    ring.write("size_bytes", std::vector<uint64_t>{64 << 10, 1 << 20});
    ring.write("count", counts);
    ring.create_group("out_of_place").write("median_us", std::vector<double>{20, 200});
    out.commit();
  }

  // Runs validate on the campaign folder; returns its stderr.
  std::string validate() {
    DryrunOptions options;
    options.command = DryrunCommand::validate;
    options.machine = path("flat.machine");
    options.inputs = {path("campaign")};
    options.out = path("validate.h5");
    ::testing::internal::CaptureStderr();
    ::testing::internal::CaptureStdout();
    try {
      validate_campaign(options, RunMetadata{});
    } catch (...) {
      stdout_ = ::testing::internal::GetCapturedStdout();
      ::testing::internal::GetCapturedStderr();
      throw;
    }
    stdout_ = ::testing::internal::GetCapturedStdout();
    return ::testing::internal::GetCapturedStderr();
  }
  std::string stdout_;
};

TEST_F(DryrunValidate, RunsWithFiguresTheirProgramNeverWritesAreSkippedAndNamed) {
  write_allreduce("good.h5", 256 << 10, {16 << 10, 256 << 10});
  write_allreduce("one-byte-segments.h5", 1, {16 << 10, 256 << 10});
  write_allreduce("huge-count.h5", 256 << 10, {16 << 10, uint64_t{1} << 63});
  write_allreduce("no-torus.h5", 256 << 10, {16 << 10, 256 << 10}, "");
  const std::string errors = validate();
  EXPECT_NE(errors.find("skipped " + path("campaign/one-byte-segments.h5") + ": not what its program writes: "
                        "segment_bytes 1 is smaller than one element"),
            std::string::npos)
      << errors;
  EXPECT_NE(errors.find("skipped " + path("campaign/huge-count.h5") + ": not what its program writes: "
                        "ring@mpi: count and size_bytes disagree in row 2"),
            std::string::npos)
      << errors;
  EXPECT_NE(errors.find("skipped " + path("campaign/no-torus.h5") + ": not what its program writes: --torus: ''"),
            std::string::npos)
      << errors;
  EXPECT_NE(stdout_.find("# all 2 rows:"), std::string::npos) << "the good run's two rows are validated\n" << stdout_;
}

TEST_F(DryrunValidate, ACampaignOfOnlyImplausibleRunsIsBadInput) {
  write_allreduce("one-byte-segments.h5", 1, {16 << 10, 256 << 10});
  EXPECT_THROW(validate(), UsageError);
}

}  // namespace
}  // namespace sb
