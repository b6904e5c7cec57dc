#pragma once
// The report's text files (data, scripts, summary, index) are opened and closed through these, so
// that a full disk or a missing folder ends the report with the file's name, not a silent gap.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "common/check.hpp"

namespace sb::report {

inline std::ofstream open_for_writing(const std::string& path) {
  std::ofstream out(path);
  if (!out) throw LibraryError("cannot write '" + path + "': " + std::strerror(errno));
  return out;
}

inline void close_checked(std::ofstream& out, const std::string& path) {
  out.close();
  if (!out) throw LibraryError("cannot finish writing '" + path + "' (disk full?)");
}

}  // namespace sb::report
