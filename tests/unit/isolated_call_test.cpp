// call_isolated: each way a child can end is told apart, and a child that runs too long is
// stopped near the limit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>

#include "common/isolated_call.hpp"

namespace sb {
namespace {

using Ending = IsolatedOutcome::Ending;
constexpr std::chrono::seconds kLimit{30};

TEST(IsolatedCall, WorkThatReturnsIsOk) {
  const IsolatedOutcome outcome = call_isolated([] {}, kLimit);
  EXPECT_TRUE(outcome.ok()) << outcome.failure;
}

TEST(IsolatedCall, AnExceptionInTheChildComesBackAsItsMessage) {
  const IsolatedOutcome outcome = call_isolated([] { throw std::runtime_error("bad local heap signature"); }, kLimit);
  EXPECT_EQ(outcome.ending, Ending::threw);
  EXPECT_EQ(outcome.failure, "bad local heap signature");
}

// abort(), not a segfault: sanitizer builds catch SIGSEGV themselves and exit instead.
TEST(IsolatedCall, AChildKilledByASignalIsACrashNamedBySignal) {
  const IsolatedOutcome outcome = call_isolated([] { std::abort(); }, kLimit);
  EXPECT_EQ(outcome.ending, Ending::crashed);
  EXPECT_EQ(outcome.failure, "Aborted");
}

TEST(IsolatedCall, AChildThatExitsOnItsOwnIsNeitherOkNorACrash) {
  const IsolatedOutcome outcome = call_isolated([] { ::_exit(7); }, kLimit);
  EXPECT_EQ(outcome.ending, Ending::other);
  EXPECT_NE(outcome.failure.find("status 7"), std::string::npos) << outcome.failure;
}

TEST(IsolatedCall, AChildStillRunningAtTheLimitIsKilled) {
  const auto start = std::chrono::steady_clock::now();
  const IsolatedOutcome outcome = call_isolated([] { ::sleep(60); }, std::chrono::seconds(1));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(outcome.ending, Ending::timed_out);
  EXPECT_LT(seconds, 30.0) << "the child was waited for, not stopped";
}

}  // namespace
}  // namespace sb
