#include "common/agreed_usage.hpp"

#include "common/check.hpp"
#include "common/mpi_env.hpp"
#include "common/usage_error.hpp"

namespace sb {

std::optional<std::string> first_usage_error(const std::optional<std::string>& mine, MPI_Comm comm) {
  int rank = 0, nranks = 1;
  SB_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  SB_MPI_CHECK(MPI_Comm_size(comm, &nranks));
  const int candidate = mine ? rank : nranks;
  int first = nranks;
  SB_MPI_CHECK(MPI_Allreduce(&candidate, &first, 1, MPI_INT, MPI_MIN, comm));
  if (first == nranks) return std::nullopt;
  const std::string reason = broadcast_string(rank == first ? *mine : std::string(), first, comm);
  return first == 0 ? reason : "rank " + std::to_string(first) + ": " + reason;
}

std::optional<std::string> first_reason_against(const std::string& why_not, MPI_Comm comm) {
  return first_usage_error(why_not.empty() ? std::nullopt : std::optional<std::string>(why_not), comm);
}

void agree_on_usage(MPI_Comm comm, const std::function<void()>& check) {
  std::optional<std::string> mine;
  try {
    check();
  } catch (const UsageError& e) {
    mine = e.what();
  }
  if (const std::optional<std::string> reason = first_usage_error(mine, comm)) throw UsageError(*reason);
}

}  // namespace sb
