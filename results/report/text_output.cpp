#include "results/report/text_output.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "common/check.hpp"

namespace sb::report {

TextFile::TextFile(std::string path)
    : path_(std::move(path)), temporary_(path_ + ".tmp-" + std::to_string(::getpid())) {
  errno = 0;
  out_.open(temporary_);
  if (!out_) throw LibraryError("cannot write '" + path_ + "': " + std::strerror(errno));
}

TextFile::~TextFile() {
  if (committed_) return;
  out_.close();
  ::unlink(temporary_.c_str());
}

void TextFile::commit() {
  // errno from the write that failed: a stream keeps no reason of its own.
  errno = 0;
  out_.close();
  if (!out_) {
    const int saved = errno;
    throw LibraryError("cannot finish writing '" + path_ + "': " + (saved ? std::strerror(saved) : "write failed"));
  }
  if (std::rename(temporary_.c_str(), path_.c_str()) != 0)
    throw LibraryError("cannot rename '" + temporary_ + "' to '" + path_ + "': " + std::strerror(errno));
  committed_ = true;
}

}  // namespace sb::report
