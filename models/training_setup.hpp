#pragma once
// The pieces of a training run's set-up that depend on where each rank runs: the backend (on a
// GPU, the one of this rank's node-local rank), the gradient exchange that fits it (host buffers
// over MPI or the schedules; device buffers over NCCL), and the checks that every node's copies
// of the data and of the checkpoint are the same.
#include <mpi.h>

#include <memory>
#include <vector>

#include "collectives/buckets/gradient_averager.hpp"
#include "models/backend.hpp"
#include "models/data/dataset.hpp"
#include "models/parameter.hpp"
#include "models/trainer.hpp"

namespace sb::models {

// Collective over comm (it finds the node-local rank).
std::unique_ptr<Backend> make_training_backend(const TrainConfig& config, MPI_Comm comm);

// Every rank opens the data itself, from its node's copy on a cluster. Copies that differ (a stale
// one with fewer images) would give the ranks different steps per epoch, and so collectives that
// no longer match: UsageError on every rank, saying how they differ. Copies of the same size that
// differ in their fingerprints (Dataset::fingerprint: other labels or pixels, class folders named
// otherwise, so that a label means another class on another node) are refused the same way,
// naming the first rank whose copy is not rank 0's. Collective over comm.
void require_same_data_on_every_rank(const DataSplits& data, MPI_Comm comm);

// The same for the checkpoint a run resumes from, which every rank reads from its node: `content`
// is the checksum of what this rank read (load_checkpoint). UsageError on every rank, naming the
// first rank whose copy is not rank 0's. Collective over comm.
void require_same_checkpoint_on_every_rank(const std::string& path, uint64_t content, MPI_Comm comm);

// The host exchange over the parameters' fp32 host gradients (the cycle strategy's live loop, or
// buckets planned by plan_buckets), or on the cudnn backend the NCCL one over their device
// gradients (buckets of the compute type, or of --compressor fp16|bf16). Collective over comm.
// UsageError for a backend that offers neither. (The cycle strategy is host-only: sb-train refuses
// it with --backend cudnn.)
std::unique_ptr<GradientAverager> make_gradient_exchange(const TrainConfig& config, Backend& backend,
                                                         const std::vector<Parameter*>& parameters, MPI_Comm comm);

// Whether the exchange make_gradient_exchange() gives calls MPI from a thread of its own while
// the training thread runs: the host exchange's communication thread does; the GPU exchange
// reduces with NCCL on a stream and calls MPI only while it is made, on the calling thread.
bool exchange_calls_mpi_from_its_own_thread(const TrainConfig& config);

}  // namespace sb::models
