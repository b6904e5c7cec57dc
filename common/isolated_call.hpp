#pragma once
// Runs a piece of work in a forked child process, so that a crash inside a library costs the
// child, not this process. For parsers that are not hardened against damaged input: HDF5 1.10
// segfaults on some flipped bytes in an attribute's message, which no return code reports.
// Not for MPI processes, whose children must not touch MPI: the work here is file reading only.
#include <chrono>
#include <functional>
#include <string>

namespace sb {

struct IsolatedOutcome {
  enum class Ending { returned, threw, crashed, timed_out, other };
  Ending ending = Ending::other;
  // threw: the exception's what(); crashed: the signal's name; otherwise how the child ended.
  std::string failure;

  bool ok() const { return ending == Ending::returned; }
};

// Calls work() in a child and waits at most `limit` for it (a damaged file can also make a
// reader loop), then kills it. The child ends with _exit, so it flushes none of this process's
// buffers and runs none of its exit handlers.
IsolatedOutcome call_isolated(const std::function<void()>& work, std::chrono::seconds limit);

}  // namespace sb
