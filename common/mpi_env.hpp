#pragma once
// The MPI world this process runs in: init/finalize as RAII, and where each rank sits (which
// node, which local rank), which the NCCL baseline uses to pick a GPU and the results record.
#include <mpi.h>

#include <string>
#include <vector>

namespace sb {

class MpiSession {
 public:
  // required: the thread support the program needs (FUNNELED: only the main thread calls MPI;
  // SERIALIZED: several threads do, one at a time). Ends the job if the library has less.
  MpiSession(int* argc, char*** argv, int required = MPI_THREAD_FUNNELED);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
};

struct WorldLayout {
  int rank = 0;
  int nranks = 1;
  int local_rank = 0;       // rank among the ranks that share this node's memory
  int local_size = 1;
  int nodes = 1;
  int max_ranks_per_node = 1;
  std::vector<std::string> hosts;  // host name of every rank, by rank
};

// Collective over MPI_COMM_WORLD.
WorldLayout discover_world_layout();

// This rank's rank among the ranks of `comm` that share its node's memory: which GPU it takes.
// Collective over `comm`.
int local_rank_in(MPI_Comm comm);

// The MPI library's own version string, first line only.
std::string mpi_library_version();

// Every rank's string (up to 255 characters), by rank. Collective over MPI_COMM_WORLD.
std::vector<std::string> gather_strings(const std::string& mine, int nranks);

// `text` as rank `root` has it (under 2 GiB), on every rank of comm. Collective over comm.
std::string broadcast_string(std::string text, int root, MPI_Comm comm);

}  // namespace sb
