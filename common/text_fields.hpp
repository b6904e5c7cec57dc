#pragma once
// The small text fields of command lines: comma-separated lists ("mpi,ring"), and numbers that
// must be the whole field ("1:2.5" -> 1 and 2.5, never "2.5x").
#include <cstdint>
#include <optional>
#include <ranges>
#include <string>
#include <string_view>
#include <vector>

namespace sb {

// "a,b,,c" -> {"a", "b", "", "c"}; "" -> {""}.
std::vector<std::string> split_list(const std::string& text, char separator = ',');

// {"mpi", "ring"} -> "mpi, ring": the lists of known names in error messages and help. An item is
// anything a std::string appends (a string, a string_view, a C string); a view adapts the rest.
template <std::ranges::input_range Items>
std::string join_list(Items&& items, std::string_view separator = ", ") {
  std::string text;
  bool first = true;
  for (const auto& item : items) {
    if (!first) text += separator;
    text += item;
    first = false;
  }
  return text;
}

// The number the whole text spells in decimal, or nothing (empty, blanks or other characters
// around it, hexadecimal, out of range; for the double: inf or nan).
std::optional<int64_t> parse_whole_integer(const std::string& text);
std::optional<double> parse_whole_number(const std::string& text);

}  // namespace sb
