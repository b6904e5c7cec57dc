#pragma once
// How an MPI program starts: every rank parses the command line (so every rank knows the
// settings), rank 0 also creates the results file (so that a bad --out is reported before any
// work), and all ranks agree whether anything failed. A failure is reported once, by rank 0, as
// "<program>: error: <what>" (the lowest failing rank's what, named when not rank 0's); the caller
// then exits with kExitUsage.
#include <mpi.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "common/agreed_usage.hpp"
#include "common/check.hpp"
#include "common/usage_error.hpp"
#include "results/results_file.hpp"
#include "results/run_metadata.hpp"

namespace sb {

// What the ranks compare at start (common/agreed_usage.hpp's agree_on_command_line): the build,
// since a node may run a stale copy of the program, then `flags` (flags_to_agree's text).
inline std::string build_and_flags(const std::string& flags) {
  return "build=" + scalebench_version() + " " + scalebench_git_commit() + "\n" + flags;
}

template <class Options>
struct ProgramStart {
  std::optional<Options> options;     // empty after --help
  std::unique_ptr<ResultsFile> file;  // rank 0 only
  bool failed = false;
};

// parse(print) returns std::optional<Options> (empty after --help) and throws UsageError; Options
// has a string `out`, the results path, defaulted here to out/<kind>-<time>-<pid>.h5, and a
// string `flags`, what every rank must be given alike (common/command_line.hpp's flags_to_agree),
// compared with the build over the ranks before anything else.
// `also` runs after parsing on every rank, for checks that read files (throwing UsageError too).
template <class Options, class Parse, class Also>
ProgramStart<Options> start_program(const char* program, const std::string& kind, bool root, Parse&& parse,
                                    Also&& also) {
  ProgramStart<Options> start;
  std::optional<std::string> error;
  try {
    start.options = parse(root);
  } catch (const UsageError& e) {
    error = e.what();
  }
  // Flags that differ between ranks are refused before anything else, whose collectives the
  // ranks would otherwise call in different orders.
  error = agree_on_command_line(error, build_and_flags(start.options ? start.options->flags : "--help"),
                                MPI_COMM_WORLD);
  if (!error && start.options) {  // then every rank has options
    try {
      also(*start.options);
      if (root) {
        if (start.options->out.empty()) start.options->out = default_results_path(kind);
        start.file = std::make_unique<ResultsFile>(start.options->out);
      }
    } catch (const UsageError& e) {
      error = e.what();
    }
    // A check of `also` may fail on one node alone (a folder it lacks): its rank's reason is printed.
    error = first_usage_error(error, MPI_COMM_WORLD);
  }
  start.failed = error.has_value();
  if (start.failed && root) std::fprintf(stderr, "%s: error: %s\n", program, error->c_str());
  return start;
}

template <class Options, class Parse>
ProgramStart<Options> start_program(const char* program, const std::string& kind, bool root, Parse&& parse) {
  return start_program<Options>(program, kind, root, parse, [](const Options&) {});
}

}  // namespace sb
