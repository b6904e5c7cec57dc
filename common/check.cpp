#include "common/check.hpp"

#include <hdf5.h>
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace sb {
namespace {

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
  if (mpi_running()) MPI_Abort(MPI_COMM_WORLD, status);
  _exit(status);
}

void die_mpi(int code, const char* call, const char* file, int line) {
  char message[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, message, &length);
  die(file, line, std::string("MPI: ") + call + ": " + message);
}

void throw_hdf5(const char* call, const char* file, int line) {
  std::string innermost = "unknown error";
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, take_innermost, &innermost);
  throw LibraryError(std::string(file) + ":" + std::to_string(line) + ": HDF5: " + call + ": " +
                     innermost);
}

}  // namespace sb
