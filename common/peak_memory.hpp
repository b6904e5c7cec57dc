#pragma once
// This process's peak resident memory (its max RSS): what sb-train reports for each rank, so that
// runs compare for memory as they do for time. Everything the process has touched counts: its
// heap and mapped tensors, the libraries' JIT code, the MPI shared-memory segments it used.
#include <cstdint>

namespace sb {

// getrusage's ru_maxrss, in bytes; 0 where the system does not say.
int64_t peak_resident_bytes();
// What is resident now (/proc/self/statm), in bytes; 0 where the system does not say. The kernel
// folds per-thread counters into the peak lazily, so the peak can trail this by a few pages.
int64_t resident_bytes();

}  // namespace sb
