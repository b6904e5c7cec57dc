#include "common/mpi_env.hpp"

#include <algorithm>
#include <climits>
#include <set>

#include "common/check.hpp"

namespace sb {

MpiSession::MpiSession(int* argc, char*** argv, int required) {
  // The watchdog thread never calls MPI; it ends the process with _exit, which the launcher
  // turns into the end of the whole job.
  int provided = 0;
  SB_MPI_CHECK(MPI_Init_thread(argc, argv, required, &provided));
  SB_CHECK(provided >= required, "the MPI library does not offer the thread support this program needs");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0;
  SB_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  set_process_rank(rank);
}

MpiSession::~MpiSession() { MPI_Finalize(); }

int local_rank_in(MPI_Comm comm) {
  int rank = 0, local_rank = 0;
  SB_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_Comm node = MPI_COMM_NULL;
  SB_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  SB_MPI_CHECK(MPI_Comm_rank(node, &local_rank));
  SB_MPI_CHECK(MPI_Comm_free(&node));
  return local_rank;
}

WorldLayout discover_world_layout() {
  WorldLayout layout;
  SB_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &layout.rank));
  SB_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &layout.nranks));

  MPI_Comm node = MPI_COMM_NULL;
  SB_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, layout.rank,
                                   MPI_INFO_NULL, &node));
  SB_MPI_CHECK(MPI_Comm_rank(node, &layout.local_rank));
  SB_MPI_CHECK(MPI_Comm_size(node, &layout.local_size));
  SB_MPI_CHECK(MPI_Comm_free(&node));

  int leader = layout.local_rank == 0 ? 1 : 0;
  SB_MPI_CHECK(MPI_Allreduce(&leader, &layout.nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  SB_MPI_CHECK(MPI_Allreduce(&layout.local_size, &layout.max_ranks_per_node, 1, MPI_INT, MPI_MAX,
                             MPI_COMM_WORLD));

  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  SB_MPI_CHECK(MPI_Get_processor_name(name, &length));
  std::vector<char> all(static_cast<size_t>(layout.nranks) * MPI_MAX_PROCESSOR_NAME);
  SB_MPI_CHECK(MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(),
                             MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD));
  for (int r = 0; r < layout.nranks; ++r)
    layout.hosts.emplace_back(&all[static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME]);
  return layout;
}

std::vector<std::string> gather_strings(const std::string& mine, int nranks) {
  constexpr int kWidth = 256;
  char buffer[kWidth] = {};
  mine.copy(buffer, kWidth - 1);
  std::vector<char> all(static_cast<size_t>(nranks) * kWidth);
  SB_MPI_CHECK(MPI_Allgather(buffer, kWidth, MPI_CHAR, all.data(), kWidth, MPI_CHAR, MPI_COMM_WORLD));
  std::vector<std::string> strings;
  for (int r = 0; r < nranks; ++r) strings.emplace_back(&all[static_cast<size_t>(r) * kWidth]);
  return strings;
}

std::string broadcast_string(std::string text, int root, MPI_Comm comm) {
  int rank = 0;
  SB_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  SB_CHECK(rank != root || text.size() < static_cast<size_t>(INT_MAX), "a broadcast string of 2 GiB or more");
  int length = static_cast<int>(text.size());
  SB_MPI_CHECK(MPI_Bcast(&length, 1, MPI_INT, root, comm));
  text.resize(static_cast<size_t>(length));
  SB_MPI_CHECK(MPI_Bcast(text.data(), length, MPI_CHAR, root, comm));
  return text;
}

std::string mpi_library_version() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(version, &length);
  std::string text(version, static_cast<size_t>(length));
  return text.substr(0, text.find_first_of("\r\n,"));
}

}  // namespace sb
