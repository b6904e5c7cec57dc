// die() gives the program's fault handler (the one that saves rank 0's finished results) its
// chance before ending the process, within a bounded time, whatever the handler does.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "common/check.hpp"
#include "common/watchdog.hpp"

namespace sb {
namespace {

using namespace std::chrono_literals;

class FatalError : public ::testing::Test {
 protected:
  // The handler runs on a thread of its own: the child must be a fresh process, not a fork.
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(FatalError, DieCallsTheHandlerWithWhatThenEndsWithTheFaultStatus) {
  EXPECT_EXIT(
      {
        set_fatal_error_handler([](const std::string& what) { std::fprintf(stderr, "handled <%s>\n", what.c_str()); });
        die(__FILE__, __LINE__, "CUDA: cudaMemcpy: an illegal memory access");
      },
      ::testing::ExitedWithCode(kExitFault), "handled <CUDA: cudaMemcpy: an illegal memory access>");
}

TEST_F(FatalError, AHandlerThatNeverReturnsIsGivenUpAfterItsLimit) {
  EXPECT_EXIT(
      {
        set_fatal_error_handler([](const std::string&) { std::this_thread::sleep_for(1h); }, 200ms);
        die(__FILE__, __LINE__, "stuck");
      },
      ::testing::ExitedWithCode(kExitFault), "did not finish within");
}

TEST_F(FatalError, AHandlerThatDiesInTurnDoesNotHangTheProcess) {
  EXPECT_EXIT(
      {
        set_fatal_error_handler([](const std::string&) { die(__FILE__, __LINE__, "saving failed as well"); }, 200ms);
        die(__FILE__, __LINE__, "first");
      },
      ::testing::ExitedWithCode(kExitFault), "saving failed as well(.|\n)*did not finish within");
}

TEST_F(FatalError, AThrowingHandlerIsReportedAndTheProcessStillEnds) {
  EXPECT_EXIT(
      {
        set_fatal_error_handler([](const std::string&) { throw LibraryError("disk full"); });
        die(__FILE__, __LINE__, "boom");
      },
      ::testing::ExitedWithCode(kExitFault), "disk full");
}

TEST_F(FatalError, TheWatchdogsFaultHandlerIsCalledWithWhatAndThePhase) {
  EXPECT_EXIT(
      {
        Watchdog watchdog(0, 0, [](const std::string& reason) { std::fprintf(stderr, "saved <%s>\n", reason.c_str()); });
        watchdog.phase("training, step 12 done");
        die(__FILE__, __LINE__, "NCCL: ncclAllReduce: unhandled system error");
      },
      ::testing::ExitedWithCode(kExitFault),
      "saved <failed: NCCL: ncclAllReduce: unhandled system error while training, step 12 done>");
}

TEST_F(FatalError, AFinishedWatchdogLeavesNoHandlerBehind) {
  EXPECT_EXIT(
      {
        { Watchdog watchdog(0, 0, [](const std::string&) { _exit(7); }); }
        die(__FILE__, __LINE__, "after the run");
      },
      ::testing::ExitedWithCode(kExitFault), "after the run");
}

}  // namespace
}  // namespace sb
