#include "common/peak_memory.hpp"

#include <sys/resource.h>

namespace sb {

int64_t peak_resident_bytes() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux counts it in KiB
}

}  // namespace sb
