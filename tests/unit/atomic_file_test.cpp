#include "common/atomic_file.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "tests/unit/temp_dir.hpp"

namespace sb {
namespace {

using AtomicFileTest = testing::TempDirTest;

std::string contents(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST_F(AtomicFileTest, AppearsUnderItsNameOnlyWhenCommitted) {
  const std::string file = path("data.txt");
  {
    AtomicFile dropped(file);
    dropped.stream() << "half";
  }
  EXPECT_TRUE(files().empty()) << "a file never committed was written";
  AtomicFile whole(file);
  whole.stream() << "whole\n";
  whole.commit();
  ASSERT_EQ(files().size(), 1u) << "the temporary file was left behind";
  EXPECT_EQ(contents(file), "whole\n");
}

// A write the disk refuses throws naming the file, with the system's reason, and leaves nothing.
TEST_F(AtomicFileTest, ARefusedWriteSaysWhyAndLeavesNothing) {
  const std::string file = path("big.txt");
  const std::string message = testing::message_of_refused_write(
      [&] {
        AtomicFile big(file);
        big.stream() << std::string(1 << 20, 'x');
        big.commit();
      },
      16 << 10);
  EXPECT_NE(message.find(file), std::string::npos) << message;
  EXPECT_NE(message.find(std::strerror(EFBIG)), std::string::npos) << message;
  EXPECT_TRUE(files().empty()) << "a file was left";
}

}  // namespace
}  // namespace sb
