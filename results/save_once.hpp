#pragma once
// The last step of a results file for the programs that may save it from two places: at the end
// of the run, or from the watchdog's fault handler with what was finished, whichever comes first
// (the caller serialises the two with its own lock).
#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include "results/results_file.hpp"

namespace sb {

// Fills the file (`write`), commits it, names it on `announce` ("# Complete results: PATH" when
// `status` is "complete", else "# Partial results: PATH") and releases it, so that a later call
// does nothing. When the file cannot be written, its temporary goes too and LibraryError names
// the path and the reason, then `elsewhere` where given (where the same figures can be found).
void save_results_once(std::unique_ptr<ResultsFile>& file, const std::string& status,
                       const std::function<void(ResultsFile&)>& write, const std::string& elsewhere = "",
                       std::FILE* announce = stdout);

}  // namespace sb
