#pragma once
// How NCCL runs a large allreduce across nodes, as a schedule the simulator can price: several
// rings at once (NCCL's channels), each on its own slice of the buffer, each visiting the ranks of
// every node in an order rotated by the ring's index, so that ring c leaves each node from a
// different local rank, and so through a different NIC where each GPU has its own. One ring
// leaves every node through one NIC, which a node of 8 NICs runs at an eighth of its bandwidth.
#include <cstddef>

#include "collectives/schedule.hpp"

namespace sb::sim {

// `channels` rings over nodes of `node_size` consecutive ranks (the last node may be smaller).
Schedule nccl_rings_allreduce(int rank, int nranks, size_t count, int node_size, int channels);

}  // namespace sb::sim
