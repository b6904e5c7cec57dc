#include "common/distinct_files.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "common/usage_error.hpp"
#include "tests/unit/temp_dir.hpp"

namespace sb {
namespace {

class DistinctFiles : public testing::TempDirTest {};

TEST_F(DistinctFiles, DifferentFilesPass) {
  EXPECT_NO_THROW(require_distinct_files({{"--out", path("a.h5")}, {"--checkpoint", path("ck/checkpoint.h5")},
                                          {"--mllog", ""}, {"--other", ""}}));
}

TEST_F(DistinctFiles, OneFileSpeltTwoWaysIsRefusedNamingBothFlags) {
  std::filesystem::create_directories(path("ck"));
  try {
    require_distinct_files({{"--out", path("ck/../ck/checkpoint.h5")}, {"--checkpoint", path("ck/checkpoint.h5")}});
    FAIL() << "accepted";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "--out and --checkpoint name the same file, '" +
                                         std::filesystem::weakly_canonical(path("ck/checkpoint.h5")).string() + "'");
  }
}

TEST_F(DistinctFiles, ASymbolicLinkIsTheFileItNames) {
  std::filesystem::create_directories(path("real"));
  std::filesystem::create_directory_symlink(path("real"), path("link"));
  EXPECT_THROW(require_distinct_files({{"--profile", path("link/p.profile")}, {"--write-profile", path("real/p.profile")}}),
               UsageError);
}

}  // namespace
}  // namespace sb
