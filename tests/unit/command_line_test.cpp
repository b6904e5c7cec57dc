// parse_command_line (common/command_line.hpp): bad command lines become UsageErrors, and a
// floating-point option refuses NaN and infinities, an unsigned one negative numbers, and an
// integer one numbers past its range, which CLI11 itself reads as numbers.
#include "common/command_line.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sb {
namespace {

// Parses `words` (the program's name first) into `app`. Returns "" or the UsageError's line.
std::string parse_into(CLI::App& app, std::vector<std::string> words) {
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  try {
    parse_command_line(app, static_cast<int>(argv.size()), argv.data(), false);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

// Parses `words` into an app with a double, an int, an unsigned and a text option, and a
// subcommand with a double option of its own. Returns "" or the UsageError's line.
std::string parse(std::vector<std::string> words, double* rate = nullptr) {
  CLI::App app("test");
  double lr = 0, sub_ratio = 0;
  int count = 0;
  uint64_t seed = 0;
  std::string name;
  app.add_option("--lr", lr);
  app.add_option("--count", count);
  app.add_option("--seed", seed);
  app.add_option("--name", name);
  CLI::App* sub = app.add_subcommand("sub");
  sub->add_option("--ratio", sub_ratio);
  const std::string error = parse_into(app, std::move(words));
  if (rate && error.empty()) *rate = lr;
  return error;
}

TEST(CommandLine, NumbersAndTextPass) {
  double lr = 0;
  EXPECT_EQ(parse({"p", "--lr", "1.5e-3", "--count", "-7", "--seed", "18446744073709551615", "--name", "nan"}, &lr), "");
  EXPECT_EQ(lr, 1.5e-3);
  EXPECT_EQ(parse({"p", "sub", "--ratio", "0.25"}), "");
}

TEST(CommandLine, NonFiniteFloatsAreRefused) {
  EXPECT_EQ(parse({"p", "--lr", "nan"}), "--lr: 'nan' is not a finite number");
  EXPECT_EQ(parse({"p", "--lr", "-inf"}), "--lr: '-inf' is not a finite number");
  EXPECT_EQ(parse({"p", "--lr", "Infinity"}), "--lr: 'Infinity' is not a finite number");
  EXPECT_EQ(parse({"p", "--lr", "1e999"}), "--lr: '1e999' is not a finite number");
  EXPECT_EQ(parse({"p", "sub", "--ratio", "NaN"}), "--ratio: 'NaN' is not a finite number");
}

TEST(CommandLine, NegativeUnsignedNumbersAreRefused) {
  EXPECT_EQ(parse({"p", "--seed", "-1"}), "--seed: '-1' is negative");
}

TEST(CommandLine, IntegersPastTheirRangeAreRefused) {
  EXPECT_EQ(parse({"p", "--seed", "18446744073709551616"}), "--seed: '18446744073709551616' is out of range");
  EXPECT_EQ(parse({"p", "--seed", "99999999999999999999999"}), "--seed: '99999999999999999999999' is out of range");
  EXPECT_NE(parse({"p", "--count", "99999999999999999999999"}), "");
  EXPECT_NE(parse({"p", "--count", "-99999999999999999999999"}), "");
  EXPECT_NE(parse({"p", "--count", "4294967296"}), "");  // past int's range, within int64's
}

TEST(CommandLine, ParseErrorsBecomeUsageErrors) {
  EXPECT_NE(parse({"p", "--count", "x"}), "");
  EXPECT_EQ(parse({"p", "--unknown"}), "unknown argument '--unknown' (p --help lists what it takes)");
  // An option given twice (a wrapper script's default and the user's own) is named, with a remedy.
  EXPECT_EQ(parse({"p", "--count", "1", "--count", "2"}), "--count takes one value and was given 2: give it once");
  EXPECT_EQ(parse({"p", "sub", "--ratio", "1", "--ratio=2", "--ratio", "3"}),
            "--ratio takes one value and was given 3: give it once");
}

// CLI11 checks required options before it reports unknown arguments: the unknown one is named,
// not the required one it was probably meant to be.
TEST(CommandLine, AMistypedFlagIsNamedNotTheRequiredOneItMissed) {
  CLI::App app("test", "test");
  std::string machine;
  app.add_option("--machine", machine)->required();
  EXPECT_EQ(parse_into(app, {"p", "--machin", "m"}), "unknown argument '--machin' (test --help lists what it takes)");
}

// The flags every rank must be given alike (flags_to_agree), from `words` parsed into an app with
// a defaulted option, an option without default, a per-rank path and a subcommand.
std::string flags_of(std::vector<std::string> words) {
  CLI::App app("test", "prog");
  app.option_defaults()->always_capture_default();
  int iters = 20;
  std::string torus, data;
  double ratio = 0.5;
  app.add_option("-n,--iters", iters);
  app.add_option("--torus", torus);
  app.add_option("--data", data);
  app.add_subcommand("sub")->add_option("--ratio", ratio);
  EXPECT_EQ(parse_into(app, std::move(words)), "");
  return flags_to_agree(app, {"--data"});
}

TEST(CommandLine, FlagsToAgreeHoldEveryOptionsValueOrDefault) {
  EXPECT_EQ(flags_of({"p"}), "program=prog\n--iters=20\n--torus=not given\n--data=not given\n");
  EXPECT_EQ(flags_of({"p", "-n", "7", "--torus", "2x2"}), "program=prog\n--iters=7\n--torus=2x2\n--data=not given\n");
  EXPECT_EQ(flags_of({"p", "sub", "--ratio", "0.25"}),
            "program=prog\n--iters=20\n--torus=not given\n--data=not given\nsub --ratio=0.25\n");
}

TEST(CommandLine, FlagsToAgreeAreTheSameForTheSameValuesHoweverGiven) {
  EXPECT_EQ(flags_of({"p"}), flags_of({"p", "--iters", "20"}));  // the default, given or not
  EXPECT_EQ(flags_of({"p", "-n", "3"}), flags_of({"p", "--iters=3"}));
  EXPECT_NE(flags_of({"p", "-n", "3"}), flags_of({"p", "-n", "4"}));
  EXPECT_NE(flags_of({"p"}), flags_of({"p", "sub"}));
}

// A per-rank option (a path to each node's own copy) may differ, but is given on every rank or none.
TEST(CommandLine, APerRankOptionsValueMayDifferButNotWhetherItIsGiven) {
  EXPECT_EQ(flags_of({"p", "--data", "/node1/x"}), flags_of({"p", "--data", "/node2/x"}));
  EXPECT_NE(flags_of({"p", "--data", "/node1/x"}), flags_of({"p"}));
}

}  // namespace
}  // namespace sb
