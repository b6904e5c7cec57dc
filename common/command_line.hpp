#pragma once
// What every program does with its CLI11 parser: --help prints the help (on the rank that
// prints) and stops the program cleanly; any parse error becomes a UsageError, which main()
// reports as one line and exit status 2.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "common/usage_error.hpp"

namespace sb {

// False after --help; throws UsageError for a bad command line.
inline bool parse_command_line(CLI::App& app, int argc, char** argv, bool print) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    if (print) std::fputs(app.help().c_str(), stdout);
    return false;
  } catch (const CLI::ParseError& error) {
    throw UsageError(error.what());
  }
  return true;
}

}  // namespace sb
