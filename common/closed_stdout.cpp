#include "common/closed_stdout.hpp"

#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace sb {
namespace {

const char* program_name = "";

void report_cut_short_stdout() {
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  if (flushed && !std::ferror(stdout)) return;
  const int error = errno;
  std::fprintf(stderr, "%s: standard output failed part-way (%s): the lines printed after are lost\n", program_name,
               error != 0 ? std::strerror(error) : "closed early, or full");
}

}  // namespace

void outlive_closed_stdout(const char* program) {
  program_name = program;
  signal(SIGPIPE, SIG_IGN);
  std::atexit(report_cut_short_stdout);
}

}  // namespace sb
