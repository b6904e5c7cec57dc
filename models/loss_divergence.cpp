#include "models/loss_divergence.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/check.hpp"
#include "common/usage_error.hpp"

namespace sb::models {

void require_finite_loss(std::span<const double> losses, int64_t step, MPI_Comm comm) {
  const auto diverged = std::find_if(losses.begin(), losses.end(), [](double loss) { return !std::isfinite(loss); });
  // {ranks whose loss diverged, the sum of one such loss from each}: the sum is NaN or an infinity
  // whenever the count is not 0, and it is what the message shows.
  double mine[2] = {0, 0}, all[2] = {0, 0};
  if (diverged != losses.end()) mine[0] = 1, mine[1] = *diverged;
  int nranks = 1;
  SB_MPI_CHECK(MPI_Comm_size(comm, &nranks));
  if (nranks > 1) SB_MPI_CHECK(MPI_Allreduce(mine, all, 2, MPI_DOUBLE, MPI_SUM, comm));
  else all[0] = mine[0], all[1] = mine[1];
  if (all[0] == 0) return;
  const std::string where =
      nranks > 1 ? " on " + std::to_string(static_cast<int>(all[0])) + " of " + std::to_string(nranks) + " ranks" : "";
  throw UsageError("the training loss diverged (" + std::to_string(all[1]) + where + ") at step " +
                   std::to_string(step) + "; lower --lr");
}

}  // namespace sb::models
