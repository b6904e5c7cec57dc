#include "common/text_input.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "common/usage_error.hpp"
#include "tests/unit/temp_dir.hpp"

namespace sb {
namespace {

using TextInputTest = testing::TempDirTest;

std::string refusal(const std::string& path, size_t max_bytes = size_t{64} << 20) {
  try {
    read_text_input(path, "profile", max_bytes);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST_F(TextInputTest, ReadsASmallFileWhole) {
  std::ofstream(path("p.txt")) << "backward 0.5\nconv1.weight 0.1 9408\n";
  EXPECT_EQ(read_text_input(path("p.txt"), "profile"), "backward 0.5\nconv1.weight 0.1 9408\n");
}

// A device that never ends (/dev/zero; /dev/full reads as zeros too) once grew one line until
// the job was killed; a folder or a missing file gets its reason.
TEST_F(TextInputTest, RefusesWhatIsNotASmallRegularFile) {
  EXPECT_EQ(refusal("/dev/zero"), "cannot read profile '/dev/zero': not a regular file");
  EXPECT_EQ(refusal(path("")), "cannot read profile '" + path("") + "': not a regular file");
  EXPECT_NE(refusal(path("absent")).find("No such file"), std::string::npos) << refusal(path("absent"));
  std::ofstream(path("big.txt")) << std::string(2000, 'x');
  EXPECT_EQ(refusal(path("big.txt"), 1000),
            "cannot read profile '" + path("big.txt") + "': 2000 bytes, more than the 1000 such a file can be");
}

}  // namespace
}  // namespace sb
