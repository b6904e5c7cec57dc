#pragma once
// Does a compressor, with error feedback, still train? A fixed least-squares problem split over
// the ranks (each holds its own rows of A and b), solved by full-batch gradient descent whose
// gradient is averaged by the compressed allreduce. Uncompressed descent sets the target: its loss
// after `reference_steps`, plus 1%; the answer is how many steps the compressed descent needs to
// reach that loss (or that it does not within max_steps, or diverges). Both descents take the
// same step, 1 / 2L. Deterministic: the data come from the seed and the rank, the descent has no
// sampling.
#include <mpi.h>

#include <cstdint>
#include <string>

#include "collectives/compress/compressor.hpp"

namespace sb {

struct ConvergenceSettings {
  int dimension = 256;        // unknowns
  int rows_per_rank = 128;    // equations each rank holds
  int reference_steps = 200;  // of uncompressed descent: its loss (+1%) is the target
  int max_steps = 4000;
  uint64_t seed = 7;
};

struct ConvergenceResult {
  static constexpr int kNotReached = -1, kDiverged = -2;
  double target_loss = 0;   // uncompressed loss after reference_steps, times 1.01
  double final_loss = 0;    // the compressed descent's loss when it stopped
  int steps = kNotReached;  // steps to reach the target; kNotReached within max_steps; kDiverged:
                            // the loss passed 100x its start (unbiased, high-variance compressors
                            // with error feedback at this step size)
};

// Collective over comm. The uncompressed reference when compressor is "none" and error feedback off
// reaches the target at reference_steps or just before.
ConvergenceResult ef_convergence(const std::string& compressor, const CompressorParams& params, bool error_feedback,
                                 const ConvergenceSettings& settings, MPI_Comm comm);

}  // namespace sb
