#include "common/check.hpp"

#include <hdf5.h>
#include <mpi.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <mutex>
#include <thread>

namespace sb {
namespace {

struct FatalErrorHook {
  std::mutex mutex;
  FatalErrorHandler handler;
  std::chrono::milliseconds limit{kFatalErrorHandlerLimit};
};

FatalErrorHook& fatal_error_hook() {
  static FatalErrorHook hook;
  return hook;
}

// Runs the registered handler once per process, on its own thread, for at most its limit.
void run_fatal_error_handler(const std::string& what) {
  static std::atomic<bool> dying{false};
  if (dying.exchange(true)) {
    // Another thread is already in die(): it ends the process, after its handler or its limit.
    // (Its handler may be this very thread, dying in turn: the limit covers that too.)
    for (;;) pause();
  }
  FatalErrorHandler handler;
  std::chrono::milliseconds limit;
  {
    FatalErrorHook& hook = fatal_error_hook();
    std::lock_guard<std::mutex> lock(hook.mutex);
    handler = hook.handler;
    limit = hook.limit;
  }
  if (!handler) return;
  auto finished = std::make_shared<std::promise<void>>();
  std::future<void> done = finished->get_future();
  std::thread([handler, what, finished] {
    try {
      handler(what);
    } catch (const std::exception& e) {  // saving failed too (a full disk): say so, end anyway
      std::fprintf(stderr, "%s: %s\n", process_label().c_str(), e.what());
    } catch (...) {
      std::fprintf(stderr, "%s: the fault handler failed\n", process_label().c_str());
    }
    finished->set_value();
  }).detach();
  if (done.wait_for(limit) == std::future_status::timeout) {
    std::fprintf(stderr, "%s: the fault handler did not finish within %.0f s; ending without it\n",
                 process_label().c_str(), std::chrono::duration<double>(limit).count());
  }
}

std::string& label_storage() {
  static std::string label = [] {
    char host[256] = "unknown-host";
    gethostname(host, sizeof host - 1);
    return std::string(host);
  }();
  return label;
}

bool mpi_running() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

// Collects the HDF5 error stack's innermost message, the one that names the real cause.
herr_t take_innermost(unsigned depth, const H5E_error2_t* err, void* out) {
  if (depth == 0 && err->desc) *static_cast<std::string*>(out) = err->desc;
  return 0;
}

}  // namespace

const std::string& process_label() { return label_storage(); }

void set_process_rank(int rank) {
  std::string& label = label_storage();
  label = label.substr(0, label.find(':')) + ":" + std::to_string(rank);
}

void die(const char* file, int line, const std::string& what, int status) {
  std::fprintf(stderr, "%s: %s:%d: %s\n", process_label().c_str(), file, line, what.c_str());
  std::fflush(stderr);
  run_fatal_error_handler(what);
  std::fflush(stdout);
  if (mpi_running()) MPI_Abort(MPI_COMM_WORLD, status);
  _exit(status);
}

void set_fatal_error_handler(FatalErrorHandler handler, std::chrono::milliseconds limit) {
  FatalErrorHook& hook = fatal_error_hook();
  std::lock_guard<std::mutex> lock(hook.mutex);
  hook.handler = std::move(handler);
  hook.limit = limit;
}

void die_mpi(int code, const char* call, const char* file, int line) {
  char message[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, message, &length);
  die(file, line, std::string("MPI: ") + call + ": " + message);
}

void throw_hdf5(const char* call, const char* file, int line) {
  throw LibraryError(std::string(file) + ":" + std::to_string(line) + ": HDF5: " + call + ": " +
                     hdf5_current_reason());
}

std::string hdf5_current_reason() {
  std::string innermost = "unknown error";
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, take_innermost, &innermost);
  return hdf5_reason(innermost);
}

std::string hdf5_reason(const std::string& description) {
  // The text between the quotes after `key`, or empty.
  const auto quoted = [&](const std::string& key) -> std::string {
    const size_t start = description.find(key + " = '");
    if (start == std::string::npos) return {};
    const size_t first = start + key.size() + 4, end = description.find('\'', first);
    return end == std::string::npos ? std::string() : description.substr(first, end - first);
  };
  const std::string os_message = quoted("error message"), path = quoted("filename");
  const size_t colon = description.find(':');
  if (!os_message.empty() && colon != std::string::npos)
    return description.substr(0, colon) + ": " + os_message + (path.empty() ? "" : " ('" + path + "')");
  std::string one_line = description;
  for (char& c : one_line)
    if (c == '\n' || c == '\r') c = ' ';
  return one_line;
}

}  // namespace sb
