#pragma once
// What every program does with its CLI11 parser: --help prints the help (on the rank that
// prints) and stops the program cleanly; any parse error becomes a UsageError, which main()
// reports as one line and exit status 2.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/usage_error.hpp"

namespace sb {

// What CLI11 2.1 reads as numbers but no option of ours means: "nan", "inf" and "1e999" for a
// double (and a NaN passes every range check written as a comparison, `x <= 0` being false), "-1"
// for an unsigned integer (which wraps to 2^64 - 1), and an integer past its type's range (which
// saturates to the largest). Refused for every option of the program and of its subcommands.
inline void require_meant_numbers(const CLI::App& app) {
  for (const CLI::Option* option : app.get_options()) {
    const std::string type = option->get_type_name();
    const bool is_unsigned = type.rfind("UINT", 0) == 0, is_signed = type.rfind("INT", 0) == 0;
    for (const std::string& value : option->results()) {
      if (type.rfind("FLOAT", 0) == 0 && !std::isfinite(std::strtod(value.c_str(), nullptr)))
        throw UsageError(option->get_name() + ": '" + value + "' is not a finite number");
      if (is_unsigned && value.find('-') != std::string::npos)
        throw UsageError(option->get_name() + ": '" + value + "' is negative");
      if (is_unsigned || is_signed) {
        errno = 0;
        if (is_unsigned) static_cast<void>(std::strtoull(value.c_str(), nullptr, 0));
        else static_cast<void>(std::strtoll(value.c_str(), nullptr, 0));
        if (errno == ERANGE) throw UsageError(option->get_name() + ": '" + value + "' is out of range");
      }
    }
  }
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) require_meant_numbers(*sub);
}

// The UsageError for a command line CLI11 refused. CLI11 checks for a subcommand and for
// required options before it reports arguments it does not know, so a mistyped flag would read
// as a missing one (`--machin m`: "--machine is required"): an unknown argument is named first.
inline UsageError usage_error_of(const CLI::App& app, const CLI::ParseError& error) {
  const std::vector<std::string> unknown = app.remaining(true);
  if (!unknown.empty())
    return UsageError("unknown argument '" + unknown.front() + "' (" + app.get_name() + " --help lists what it takes)");
  // CLI11 words an option given twice "--iters: At Most 1 required but received 2".
  const std::string what = error.what(), at_most = ": At Most 1 required but received ";
  if (const size_t at = what.find(at_most); at != std::string::npos)
    return UsageError(what.substr(0, at) + " takes one value and was given " + what.substr(at + at_most.size()) +
                      ": give it once");
  return UsageError(what);
}

// The flags every rank must be given alike: the program's name, then one "name=value" line per
// option of `app` and of its subcommands (the value as given, else the default). The options
// named in `per_rank` must be given on every rank or on none, with values that may differ: a path
// to each node's own copy, a thread count for each node's cores, what rank 0 alone writes.
// common/agreed_usage.hpp compares them over the ranks: ranks given different sizes, step counts
// or data types would otherwise hang in mismatched collectives, or report "wrong values".
inline std::string flags_to_agree(const CLI::App& app, const std::vector<std::string>& per_rank = {},
                                  const std::string& prefix = "") {
  std::string text = prefix.empty() ? "program=" + app.get_name() + "\n" : "";
  for (const CLI::Option* option : app.get_options()) {
    const std::string name = option->get_name();
    if (name.empty() || name == "--help") continue;  // a run that gets here was not asked for help
    std::string value;
    for (const std::string& result : option->results()) value += (value.empty() ? "" : " ") + result;
    if (option->empty()) value = option->get_default_str();
    if (std::find(per_rank.begin(), per_rank.end(), name) != per_rank.end()) value = option->empty() ? "" : "given";
    text += prefix + name + "=" + (value.empty() ? "not given" : value) + "\n";
  }
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    if (sub->parsed()) text += flags_to_agree(*sub, per_rank, prefix + sub->get_name() + " ");
  return text;
}

// False after --help; throws UsageError for a bad command line.
inline bool parse_command_line(CLI::App& app, int argc, char** argv, bool print) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    if (print) std::fputs(app.help().c_str(), stdout);
    return false;
  } catch (const CLI::ParseError& error) {
    throw usage_error_of(app, error);
  }
  require_meant_numbers(app);
  return true;
}

}  // namespace sb
