#pragma once
// Check macros for every library call. A failed call ends the whole job with one line that says
// where (host:rank, file:line), which call, and the library's own message. Exit status 3 marks a
// fault of the run (library error, timeout), distinct from bad input (2) and wrong results (1).
#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>

namespace sb {

inline constexpr int kExitWrongResults = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitFault = 3;

// "host:rank" of this process once MPI is up, "host" before.
const std::string& process_label();
void set_process_rank(int rank);

// Prints "<label>: <file>:<line>: <what>" on stderr, gives the fatal-error handler (below) its
// chance, and ends the job: MPI_Abort when MPI is running (so no peer is left hanging), _exit
// otherwise. A second thread that dies meanwhile waits for the first to end the process.
[[noreturn]] void die(const char* file, int line, const std::string& what, int status = kExitFault);

// What die() calls before ending the job, given die's `what`: the program's fault handler, which
// on rank 0 saves the results finished so far (Watchdog registers it). It runs on a thread of its
// own and die() waits at most `limit` for it, since it may need a lock that the dying thread
// holds. An empty handler clears it.
using FatalErrorHandler = std::function<void(const std::string& what)>;
inline constexpr std::chrono::seconds kFatalErrorHandlerLimit{60};
void set_fatal_error_handler(FatalErrorHandler handler,
                             std::chrono::milliseconds limit = kFatalErrorHandlerLimit);

[[noreturn]] void die_mpi(int code, const char* call, const char* file, int line);
// HDF5 failures throw instead: a results file that cannot be read is bad input for a reader,
// and one that cannot be written is reported by the program with the results it could not save.
struct LibraryError : std::runtime_error {
  explicit LibraryError(const std::string& what) : std::runtime_error(what) {}
};
[[noreturn]] void throw_hdf5(const char* call, const char* file, int line);
// The innermost message of HDF5's current error stack (the one that names the real cause), in one
// line (hdf5_reason).
std::string hdf5_current_reason();
// An HDF5 error description in one line. The file driver's report of a failed write or read
// ("file write failed: time = <date with its newline>, filename = 'F', ..., error message = 'No
// space left on device', buf = ...") becomes "file write failed: No space left on device ('F')";
// any other description keeps its words, newlines made spaces.
std::string hdf5_reason(const std::string& description);

}  // namespace sb

#define SB_CHECK(cond, msg)                                                 \
  do {                                                                      \
    if (!(cond)) ::sb::die(__FILE__, __LINE__, std::string("check failed: ") + #cond + ": " + (msg)); \
  } while (0)

#define SB_MPI_CHECK(call)                                               \
  do {                                                                   \
    int sb_mpi_rc_ = (call);                                             \
    if (sb_mpi_rc_ != 0) ::sb::die_mpi(sb_mpi_rc_, #call, __FILE__, __LINE__); \
  } while (0)

// HDF5 calls return a negative value (herr_t or hid_t) on failure.
#define SB_H5_CHECK(call)                                                         \
  ([&]() {                                                                        \
    auto sb_h5_rc_ = (call);                                                      \
    if (sb_h5_rc_ < 0) ::sb::throw_hdf5(#call, __FILE__, __LINE__);                 \
    return sb_h5_rc_;                                                             \
  }())
