#pragma once
// Bad input (a flag, a size, a file) is reported as one line and exit status 2. Code that finds
// bad input throws UsageError; each program's main() turns it into that line.
#include <stdexcept>
#include <string>

namespace sb {

struct UsageError : std::runtime_error {
  explicit UsageError(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace sb
