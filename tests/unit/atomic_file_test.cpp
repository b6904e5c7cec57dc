#include "common/atomic_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "common/check.hpp"
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

// A device, a pipe or a folder where the finished file would go is refused before any work, and
// at the rename: run as root, renaming over /dev/null deletes the device node (a fuzzed
// `--write-profile /dev/full` once replaced this machine's /dev/full with a text file).
TEST_F(AtomicFileTest, WillNotReplaceADeviceAPipeOrAFolder) {
  EXPECT_EQ(not_a_file_in_the_way(path("absent.txt")), "");
  AtomicFile regular(path("regular.txt"));
  regular.stream() << "x";
  regular.commit();
  EXPECT_EQ(not_a_file_in_the_way(path("regular.txt")), "");
  EXPECT_NE(not_a_file_in_the_way("/dev/null").find("not a regular file"), std::string::npos);
  EXPECT_NE(not_a_file_in_the_way(path("")).find(std::strerror(EISDIR)), std::string::npos);
  EXPECT_NE(why_not_writable("/dev/null").find("not a regular file"), std::string::npos);
  const std::string fifo = path("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(not_a_file_in_the_way(fifo).find("not a regular file"), std::string::npos);
  try {
    write_file_atomically(fifo, "data", /*sync=*/false);
    ADD_FAILURE() << "a pipe was replaced";
  } catch (const LibraryError& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
  }
  struct stat after {};
  ASSERT_EQ(::stat(fifo.c_str(), &after), 0);
  EXPECT_TRUE(S_ISFIFO(after.st_mode)) << "the pipe is gone";
  EXPECT_EQ(files().size(), 2u) << "a temporary file was left";
}

}  // namespace
}  // namespace sb
