#pragma once
// The host memcpy bandwidth each rank gets while every rank of the communicator copies at once:
// the in-run ceiling that host allreduces are judged against (memory, not the network, is the
// link between the ranks of one node).
#include <mpi.h>

#include <cstdint>

namespace sb {

struct MemcpyBandwidth {
  uint64_t bytes = 0;  // size of each copy
  double GBps = 0;     // bytes copied per second per rank: median over repetitions, mean over ranks
};

// Collective over `comm`; the result is the same on every rank.
MemcpyBandwidth measure_memcpy_bandwidth(uint64_t bytes, int repetitions, MPI_Comm comm);

}  // namespace sb
