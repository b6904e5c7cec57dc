#pragma once
// Predicted allreduce times of everything sb-allreduce runs: the schedules on their transports,
// executed by the simulator, and the library baselines, modelled as the schedule the library is
// known to pick at that size and scale:
//   mpi   Open MPI's `tuned` component, fixed decision rules for commutative operations, reduced
//         to their shape: recursive doubling below 10 KB (Open MPI's intermediate_message),
//         Rabenseifner on a power-of-two communicator, ring otherwise; run on the mpi transport
//         without segmentation (tuned's ring reduces whole blocks).
//   nccl  the faster of NCCL's rings (one per local rank of a node, its channels, at most 16,
//         each on a slice of the buffer and leaving every node from a different rank:
//         sim/nccl_rings.hpp) and, across nodes, the double binary tree, as NCCL's own cost model
//         picks between them; on device buffers with the machine's gamma. Its protocols (LL,
//         LL128, Simple) are not modelled.
// A host collective whose working set on a node (4 x bytes x the node's ranks: input, result, and
// the staging and library buffers the peers' data passes through) fits in the machine's cache is
// priced with its cached rates, and one with more ranks on a node than cores with the node's
// rates shared among them (machine.hpp).
#include <cstddef>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "collectives/algorithms/algorithms.hpp"
#include "collectives/allreduce_impl.hpp"
#include "sim/machine.hpp"
#include "sim/schedule_sim.hpp"

namespace sb::sim {

struct AllreduceCase {
  std::string impl;  // "mpi", "nccl", or a schedule: ring, rd, rabenseifner, tree, dbtree, hier, torus2d
  Transport transport = Transport::mpi;  // a schedule's
  int nranks = 2;
  size_t count = 0;
  DataType type = DataType::float32;
  size_t segment_bytes = 256 << 10;
  int node_size = 0;  // hier's ranks per node; 0: the machine's level-0 group
  int torus_x = 0, torus_y = 0;
};

struct AllreducePrediction {
  double time_s = 0;              // the slowest rank's
  std::vector<double> finish_s;   // every rank's, from the common start
  std::string modelled_as;  // the schedule and transport that were priced, e.g. "rabenseifner@mpi"
};

// Throws UsageError for an unknown implementation, or one that check_priceable refuses.
AllreducePrediction predict_allreduce(const Machine& machine, const AllreduceCase& c);

// The simulator holds every rank's schedule of a collective at once and walks each of its steps:
// about 60 to 250 bytes and up to a few microseconds per step and size (ring at 2048 ranks,
// 17 million steps: 1.3 GB and 6 s; recursive doubling at 2^20 ranks, 42 million: 10 GB, over
// 100 s). Pricing more steps than this at once is refused.
inline constexpr size_t kMostStepsPriced = size_t{1} << 25;
// The steps pricing `c` walks (the most of the schedules a library baseline is priced as),
// estimated from three ranks' schedules times the ranks.
size_t steps_to_price(const Machine& machine, const AllreduceCase& c);
// Throws UsageError, naming the implementation, the ranks and the size, when pricing `c` would
// take more than kMostStepsPriced steps; before any schedule of all the ranks is built.
void check_priceable(const Machine& machine, const AllreduceCase& c);

// Whether `impl` names a library baseline or a schedule.
bool is_known_allreduce(const std::string& impl);

// Predictions of one implementation at one scale, cached by element count: a training step asks
// for the same bucket sizes again and again.
class AllreduceTimes {
 public:
  AllreduceTimes(const Machine& machine, AllreduceCase base) : machine_(machine), base_(std::move(base)) {}
  // It prices on the machine it is given, later: a temporary one would be gone by then.
  AllreduceTimes(Machine&& machine, AllreduceCase base) = delete;
  double seconds(size_t count);

 private:
  const Machine& machine_;
  AllreduceCase base_;
  std::map<size_t, double> cache_;
};

}  // namespace sb::sim
