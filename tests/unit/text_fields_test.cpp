#include "common/text_fields.hpp"

#include <gtest/gtest.h>

namespace sb {
namespace {

TEST(SplitList, KeepsEmptyFields) {
  EXPECT_EQ(split_list("a,b,,c"), (std::vector<std::string>{"a", "b", "", "c"}));
  EXPECT_EQ(split_list(""), (std::vector<std::string>{""}));
  EXPECT_EQ(split_list("1:2.5", ':'), (std::vector<std::string>{"1", "2.5"}));
}

TEST(ParseWholeInteger, DecimalOnly) {
  EXPECT_EQ(parse_whole_integer("0"), 0);
  EXPECT_EQ(parse_whole_integer("-7"), -7);
  EXPECT_EQ(parse_whole_integer("9223372036854775807"), INT64_MAX);
  for (const char* bad : {"", " 1", "1 ", "+1", "1x", "0x10", "1.0", "9223372036854775808", "one"})
    EXPECT_EQ(parse_whole_integer(bad), std::nullopt) << "'" << bad << "'";
}

// --straggler 1:inf passed (a rank told to take forever), as did " 1:2" and "1:0x2" for 1:2.
TEST(ParseWholeNumber, FiniteDecimalOnly) {
  EXPECT_EQ(parse_whole_number("2.5"), 2.5);
  EXPECT_EQ(parse_whole_number("-0.25"), -0.25);
  EXPECT_EQ(parse_whole_number("1e3"), 1000.0);
  EXPECT_EQ(parse_whole_number("3"), 3.0);
  for (const char* bad : {"", " 2", "2 ", "2x", "0x2", "0x1p3", "inf", "-inf", "nan", "infinity", "1e400", "."})
    EXPECT_EQ(parse_whole_number(bad), std::nullopt) << "'" << bad << "'";
}

}  // namespace
}  // namespace sb
