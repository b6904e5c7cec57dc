#pragma once
// The check that ends training once its loss is no longer a number, made by every rank together:
// each learns at the same step that some rank's loss diverged, and each throws. A rank that threw
// alone would leave its peers waiting for it in the next step's gradient exchange until --timeout,
// wherever the launcher does not end the job when its first rank fails (srun without
// --kill-on-bad-exit). One allreduce of two doubles per step, after the exchange.
#include <mpi.h>

#include <cstdint>
#include <span>

namespace sb::models {

// Throws UsageError on every rank of `comm` when any rank's `losses` (this step's, one per
// micro-batch) holds a NaN or an infinity; `step` is the step's number for the message.
void require_finite_loss(std::span<const double> losses, int64_t step, MPI_Comm comm);

}  // namespace sb::models
