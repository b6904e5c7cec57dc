#include "common/agreed_usage.hpp"

#include <algorithm>
#include <climits>

#include "common/check.hpp"
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
  std::string reason = rank == first ? *mine : std::string();
  int length = static_cast<int>(std::min<size_t>(reason.size(), INT_MAX));
  SB_MPI_CHECK(MPI_Bcast(&length, 1, MPI_INT, first, comm));
  reason.resize(static_cast<size_t>(length));
  SB_MPI_CHECK(MPI_Bcast(reason.data(), length, MPI_CHAR, first, comm));
  return first == 0 ? reason : "rank " + std::to_string(first) + ": " + reason;
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
