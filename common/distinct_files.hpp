#pragma once
// The files one run names on its command line, checked to be different files before any work: a
// program writing two of them as one loses both (sb-train's results and checkpoint), or overwrites
// the input it reads (sb-buckets' --profile and --write-profile).
#include <string>
#include <utility>
#include <vector>

namespace sb {

// files: (flag, path) pairs; empty paths are skipped. Throws UsageError naming the first two flags
// whose paths are one file, however spelt ("a/../a/x.h5", a symbolic link), existing or not.
void require_distinct_files(const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace sb
