#pragma once
// Helpers for tests that write files: a fresh folder per test, and a write run where the disk
// refuses it.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "common/check.hpp"

namespace sb::testing {

// A folder of the test's own under the system's temporary folder, removed after the test.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("sb-" + std::string(test->test_suite_name()) + "-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::vector<std::filesystem::path> files() const {
    return {std::filesystem::directory_iterator(dir_), std::filesystem::directory_iterator()};
  }
  std::filesystem::path dir_;
};

// Runs `write` in a child process whose files may not grow past `limit_bytes` (RLIMIT_FSIZE, with
// SIGXFSZ ignored, so a write past it fails with EFBIG as a full disk fails with ENOSPC) and
// returns the message of the LibraryError it threw: empty when it threw none, as the caller's
// expectations will then say.
inline std::string message_of_refused_write(const std::function<void()>& write, rlim_t limit_bytes) {
  int pipe_ends[2];
  if (::pipe(pipe_ends) != 0) return "pipe failed";
  const pid_t child = ::fork();
  if (child < 0) return "fork failed";
  if (child == 0) {
    ::close(pipe_ends[0]);
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{limit_bytes, limit_bytes};
    std::string message = ::setrlimit(RLIMIT_FSIZE, &limit) == 0 ? "" : "setrlimit failed";
    if (message.empty()) {
      try {
        write();
      } catch (const LibraryError& e) {
        message = e.what();
      }
    }
    const ssize_t written = ::write(pipe_ends[1], message.data(), message.size());
    ::_exit(written == static_cast<ssize_t>(message.size()) ? 0 : 1);
  }
  ::close(pipe_ends[1]);
  std::string message;
  char buffer[512];
  for (ssize_t n; (n = ::read(pipe_ends[0], buffer, sizeof buffer)) > 0;) message.append(buffer, static_cast<size_t>(n));
  ::close(pipe_ends[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  return message;
}

}  // namespace sb::testing
