#pragma once
// Bad input (a flag, a size, a file) is reported as one line and exit status 2. Code that finds
// bad input throws UsageError; each program's main() turns it into that line.
#include <stdexcept>
#include <string>

namespace sb {

struct UsageError : std::runtime_error {
  explicit UsageError(const std::string& what) : std::runtime_error(what) {}
};

// Bad input that one rank finds alone while the job runs (its shard of the data, say): its peers
// cannot know, and wait for it in their next collective. A program does not return from it as from
// a UsageError (rank 0 printing the line, every rank finding the same), since that rank's
// MPI_Finalize would wait for peers that wait for it: the rank prints the line itself and ends
// the job (MPI_Abort with exit status 2).
struct RankUsageError : UsageError {
  using UsageError::UsageError;
};

}  // namespace sb
