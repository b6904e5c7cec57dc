// Ring allreduce: the buffer in p blocks; p-1 rounds of reduce-scatter pass partial sums around
// the ring until each rank holds one fully reduced block, then p-1 rounds of allgather pass the
// reduced blocks around. Every rank sends 2(p-1)/p of the buffer: bandwidth-optimal.
#include "collectives/algorithms/algorithms.hpp"

namespace sb {

Schedule ring_allreduce(int rank, int nranks, size_t count, const AlgorithmParams&) {
  Schedule s{rank, nranks, count, 0, {}};
  const int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
  auto block = [&](int b) { return block_of(count, nranks, ((b % nranks) + nranks) % nranks); };
  for (int step = 0; step < nranks - 1; ++step) {
    Round& round = s.new_round();
    Schedule::send(round, next, block(rank - step));
    Schedule::recv_reduce(round, prev, block(rank - step - 1));
  }
  // Rank r now holds block r+1 fully reduced.
  for (int step = 0; step < nranks - 1; ++step) {
    Round& round = s.new_round();
    Schedule::send(round, next, block(rank + 1 - step));
    Schedule::recv_copy(round, prev, block(rank - step));
  }
  return s;
}

}  // namespace sb
