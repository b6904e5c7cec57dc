#pragma once
// JSON text for the files scalebench writes by hand (the MLPerf log, the Chrome trace): a string
// quoted and escaped as RFC 8259 asks.
#include <string>
#include <string_view>

namespace sb {

// "a\"b" for a"b: quotes and backslashes escaped, control characters as \u00XX.
std::string json_string(std::string_view value);

}  // namespace sb
