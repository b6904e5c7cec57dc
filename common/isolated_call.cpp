#include "common/isolated_call.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>

namespace sb {
namespace {

// The child's report: its exception message on the pipe, then the exit status says which case.
constexpr int kChildThrew = 2;
constexpr int kChildFailedUnknown = 3;

void write_all(int fd, const std::string& text) {
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

[[noreturn]] void run_child(const std::function<void()>& work, int report_fd) {
  try {
    work();
  } catch (const std::exception& e) {
    write_all(report_fd, e.what());
    ::_exit(kChildThrew);
  } catch (...) {
    ::_exit(kChildFailedUnknown);
  }
  ::_exit(0);
}

// Reads the child's message until it closes the pipe or the deadline passes; false on timeout.
bool read_report(int fd, std::chrono::steady_clock::time_point deadline, std::string& report) {
  char buffer[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd readable{fd, POLLIN, 0};
    const int ready = ::poll(&readable, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;  // out of time (or poll failed: the child is stopped all the same)
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;  // closed: the child has ended
    report.append(buffer, static_cast<size_t>(n));
  }
}

int wait_for(pid_t child) {
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

IsolatedOutcome call_isolated(const std::function<void()>& work, std::chrono::seconds limit) {
  using Ending = IsolatedOutcome::Ending;
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return {Ending::other, std::string("cannot make a pipe: ") + std::strerror(errno)};
  const pid_t child = ::fork();
  if (child < 0) {
    ::close(pipe_fds[0]), ::close(pipe_fds[1]);
    return {Ending::other, std::string("cannot fork: ") + std::strerror(errno)};
  }
  if (child == 0) {
    ::close(pipe_fds[0]);
    run_child(work, pipe_fds[1]);
  }
  ::close(pipe_fds[1]);
  std::string report;
  const bool ended = read_report(pipe_fds[0], std::chrono::steady_clock::now() + limit, report);
  ::close(pipe_fds[0]);
  if (!ended) ::kill(child, SIGKILL);
  const int status = wait_for(child);
  if (!ended) return {Ending::timed_out, "still running after " + std::to_string(limit.count()) + " s (killed)"};
  if (WIFSIGNALED(status)) return {Ending::crashed, ::strsignal(WTERMSIG(status))};
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {Ending::returned, {}};
  if (WIFEXITED(status) && WEXITSTATUS(status) == kChildThrew) return {Ending::threw, report};
  return {Ending::other, "ended with status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1)};
}

}  // namespace sb
