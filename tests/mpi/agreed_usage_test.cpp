// Bad input found by some ranks only (a folder one node lacks) ends every rank alike, with the
// reason of the lowest rank that found it.
#include <gtest/gtest.h>
#include <mpi.h>

#include <optional>
#include <string>

#include "common/agreed_usage.hpp"
#include "common/usage_error.hpp"

namespace sb {
namespace {

struct World {
  int rank = 0, size = 1;
  World() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  }
};

// What agree_on_usage threw on this rank, or nullopt.
std::optional<std::string> agreed(bool fail_here, const std::string& why) {
  try {
    agree_on_usage(MPI_COMM_WORLD, [&] {
      if (fail_here) throw UsageError(why);
    });
  } catch (const UsageError& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

TEST(AgreedUsage, NoRankFindingBadInputIsNoError) {
  EXPECT_EQ(agreed(false, ""), std::nullopt);
  EXPECT_EQ(first_usage_error(std::nullopt, MPI_COMM_WORLD), std::nullopt);
}

TEST(AgreedUsage, TheLastRankAloneEndsEveryRankWithItsReasonAndItsRankNamed) {
  const World w;
  const std::string why = "image folder 'data' has no train/ directory";
  const std::optional<std::string> thrown = agreed(w.rank == w.size - 1, why);
  ASSERT_TRUE(thrown.has_value());
  EXPECT_EQ(*thrown, w.size == 1 ? why : "rank " + std::to_string(w.size - 1) + ": " + why);
}

TEST(AgreedUsage, WhenSeveralRanksFindItTheLowestsReasonIsGiven) {
  const World w;
  // Every rank but 0 fails, each with its own reason: rank 1's is given (rank 0's when alone).
  const std::optional<std::string> thrown = agreed(w.size == 1 || w.rank > 0, "reason of " + std::to_string(w.rank));
  ASSERT_TRUE(thrown.has_value());
  EXPECT_EQ(*thrown, w.size == 1 ? "reason of 0" : "rank 1: reason of 1");
  // Every rank fails alike (a bad flag): rank 0's reason, unnamed, as before.
  EXPECT_EQ(agreed(true, "--batch must be positive"), "--batch must be positive");
}

TEST(AgreedUsage, AnEmptyOrLongReasonArrivesWhole) {
  const World w;
  EXPECT_EQ(first_usage_error(w.rank == 0 ? std::optional<std::string>("") : std::nullopt, MPI_COMM_WORLD), "");
  const std::string long_reason(100000, 'x');
  const std::optional<std::string> got =
      first_usage_error(w.rank == w.size - 1 ? std::optional<std::string>(long_reason) : std::nullopt, MPI_COMM_WORLD);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->size(), long_reason.size() + (w.size == 1 ? 0 : ("rank " + std::to_string(w.size - 1) + ": ").size()));
}

TEST(AgreedUsage, FlagsThatAgreeAreNoError) {
  const std::string flags = "program=sb-allreduce\n--maxbytes=64K\n--iters=20\n";
  EXPECT_EQ(why_flags_differ(flags, MPI_COMM_WORLD), "");
  EXPECT_EQ(agree_on_command_line(std::nullopt, flags, MPI_COMM_WORLD), std::nullopt);
  EXPECT_EQ(agree_on_command_line(std::nullopt, "--help", MPI_COMM_WORLD), std::nullopt);  // --help everywhere
}

// A node's launch line may spell a value otherwise: the same number is the same flag.
TEST(AgreedUsage, TheSameNumberWrittenOtherwiseAgrees) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const bool odd = rank % 2 == 1;
  const std::string flags = std::string("program=sb-allreduce\n--maxbytes=") + (odd ? "1048576" : "1M") +
                            "\n--lr=" + (odd ? ".10" : "0.1") + "\n--ranks=" + (odd ? "1 8K" : "1 8192") + "\n";
  EXPECT_EQ(why_flags_differ(flags, MPI_COMM_WORLD), "");
  // Not so a different number, a word that is no number, or another count of words.
  const std::string other = std::string("program=sb-allreduce\n--maxbytes=") + (odd ? "1048577" : "1M") + "\n";
  EXPECT_EQ(why_flags_differ(other, MPI_COMM_WORLD).rfind(odd ? "--maxbytes is 1048577 here but 1M" : "", 0), 0u);
  const std::string words = std::string("program=sb-allreduce\n--impl=") + (odd ? "ring rd" : "ring") + "\n";
  EXPECT_EQ(why_flags_differ(words, MPI_COMM_WORLD).empty(), !odd);
  // The build is compared as text: a commit of digits is no number.
  const std::string build = std::string("build=0.1 ") + (odd ? "0123456" : "123456") + "\nprogram=sb-allreduce\n";
  EXPECT_EQ(why_flags_differ(build, MPI_COMM_WORLD).empty(), !odd);
}

TEST(AgreedUsage, TheLastRanksDifferentFlagIsNamedWithBothValues) {
  const World w;
  const bool last = w.size > 1 && w.rank == w.size - 1;
  const std::string flags = std::string("program=sb-allreduce\n--maxbytes=") + (last ? "1M" : "64K") + "\n--iters=20\n";
  EXPECT_EQ(why_flags_differ(flags, MPI_COMM_WORLD), last ? "--maxbytes is 1M here but 64K on rank 0; every rank must run the same build, given the same flags" : "");
  const std::optional<std::string> agreed = agree_on_command_line(std::nullopt, flags, MPI_COMM_WORLD);
  if (w.size == 1) {
    EXPECT_EQ(agreed, std::nullopt);
  } else {
    EXPECT_EQ(agreed, "rank " + std::to_string(w.size - 1) +
                          ": --maxbytes is 1M here but 64K on rank 0; every rank must run the same build, given the "
                          "same flags");
  }
}

// A node running a stale copy of the program (another build) is named before any flag.
TEST(AgreedUsage, AnotherBuildOnOneRankIsNamed) {
  const World w;
  const bool last = w.size > 1 && w.rank == w.size - 1;
  const std::string flags =
      std::string("build=0.1.0 ") + (last ? "1ff613fe4293" : "3792a8b6b871") + "\nprogram=sb-train\n--steps=8\n";
  EXPECT_EQ(why_flags_differ(flags, MPI_COMM_WORLD),
            last ? "build is 0.1.0 1ff613fe4293 here but 0.1.0 3792a8b6b871 on rank 0; every rank must run the same "
                   "build, given the same flags"
                 : "");
}

TEST(AgreedUsage, AParseErrorIsGivenBeforeFlagsThatDiffer) {
  const World w;
  // The last rank has a bad flag (so its flags could not be read), and --help on rank 0 alone.
  const bool last = w.size > 1 && w.rank == w.size - 1;
  const std::optional<std::string> bad = last ? std::optional<std::string>("unknown argument '--sizes'") : std::nullopt;
  const std::optional<std::string> agreed = agree_on_command_line(bad, w.rank == 0 ? "--help" : "program=p\n", MPI_COMM_WORLD);
  if (w.size == 1) {
    EXPECT_EQ(agreed, std::nullopt);
  } else {
    EXPECT_EQ(agreed, "rank " + std::to_string(w.size - 1) + ": unknown argument '--sizes'");
    // Without the parse error, --help on rank 0 alone is refused: the others would run alone.
    const std::optional<std::string> help_alone =
        agree_on_command_line(std::nullopt, w.rank == 0 ? "--help" : "program=p\n", MPI_COMM_WORLD);
    ASSERT_TRUE(help_alone.has_value());
    EXPECT_NE(help_alone->find("rank 1: its command line is not rank 0's"), std::string::npos) << *help_alone;
  }
}

}  // namespace
}  // namespace sb
