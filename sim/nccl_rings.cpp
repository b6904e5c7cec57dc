#include "sim/nccl_rings.hpp"

#include <algorithm>
#include <vector>

#include "collectives/algorithms/algorithms.hpp"

namespace sb::sim {

Schedule nccl_rings_allreduce(int rank, int nranks, size_t count, int node_size, int channels) {
  Schedule s{rank, nranks, count, 0, {}};
  node_size = std::clamp(node_size, 1, std::max(nranks, 1));
  channels = std::max(channels, 1);
  size_t rounds = 0;
  for (int c = 0; c < channels; ++c) {
    // Ring c: nodes in order; inside a node of n ranks, local ranks c, c+1, ... (mod n).
    std::vector<int> members;
    for (int first = 0; first < nranks; first += node_size) {
      const int n = std::min(node_size, nranks - first);
      for (int k = 0; k < n; ++k) members.push_back(first + (c + k) % n);
    }
    Chunk slice = block_of(count, channels, c);
    slice.buffer = BufferId::work;
    rounds = add_ring_reduce_scatter(s, members, slice, 0);
    add_ring_allgather(s, members, slice, rounds);
  }
  return s;
}

}  // namespace sb::sim
