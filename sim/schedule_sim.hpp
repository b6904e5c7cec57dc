#pragma once
// Prices schedules on a machine by executing them: round by round, every rank's receives become
// messages that hold the sender's and receiver's ports (and the group's bus) for
// alpha + bytes / rate, with the rate shared max-min fairly among the round's messages; received
// pieces are reduced as the transport reduces them; each rank moves to its next round when its
// own sends, receives, reductions and local steps are done (ranks are not synchronised per round:
// a rank waits only for the peers it exchanges with, as the transports do).
//
// How each transport is modelled:
//   mpi   a message starts when both ranks have reached the round (rendezvous); it arrives in
//         pieces of `segment_bytes`, and the receiver reduces each piece as it lands, one at a
//         time, while later pieces are in flight; a range that the rank also sends in that
//         round is reduced only once its sends are done (as MpiTransport stages it).
//   shm   inside level 0 a receive is the receiver reading the peer's memory: shm alpha, then
//         a copy at the shm bandwidth or a reduction at the slower of that and gamma, fused
//         (one pass), with the node's memory (copy x its ranks) shared by its readers; the
//         sender's round ends when its readers are done. Steps to another group of level 0 go
//         over MPI, as with the mpi transport.
//   nccl  as mpi, on device buffers: the machine's gamma is the GPU's reduction rate.
#include <cstddef>
#include <vector>

#include "collectives/algorithms/algorithms.hpp"
#include "collectives/allreduce_impl.hpp"
#include "sim/machine.hpp"

namespace sb::sim {

struct SimConfig {
  Transport transport = Transport::mpi;
  DataType type = DataType::float32;
  size_t segment_bytes = 256 << 10;  // the mpi transport's piece; 0: whole messages
};

struct SimResult {
  double time_s = 0;                // the slowest rank's finish
  std::vector<double> finish_s;     // per rank
  size_t messages = 0;
  double bytes_moved = 0;           // over all messages
};

// schedules[r] is rank r's schedule (all of one collective, as the algorithms build them).
SimResult simulate_schedules(const Machine& machine, const std::vector<Schedule>& schedules, const SimConfig& config);

// Builds every rank's schedule of `algorithm` for `count` elements and prices it.
SimResult simulate_algorithm(const Machine& machine, const AllreduceAlgorithm& algorithm, const AlgorithmParams& params,
                             int nranks, size_t count, const SimConfig& config);

}  // namespace sb::sim
