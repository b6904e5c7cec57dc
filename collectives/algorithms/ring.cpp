// Ring allreduce: the range in n blocks; n-1 rounds of reduce-scatter pass partial sums around
// the ring until each member holds one fully reduced block, then n-1 rounds of allgather pass the
// reduced blocks around. Every member sends 2(n-1)/n of the range: bandwidth-optimal. The two
// phases are also the row phases of torus2d, on a subset of the ranks.
#include <algorithm>

#include "collectives/algorithms/algorithms.hpp"

namespace sb {
namespace {

struct RingPosition {
  int index = -1;  // position of this rank in the ring, -1 when not a member
  int next = -1, prev = -1;
};

RingPosition position_in(const std::vector<int>& members, int rank) {
  const int n = static_cast<int>(members.size());
  RingPosition at;
  const auto it = std::find(members.begin(), members.end(), rank);
  if (it == members.end()) return at;
  at.index = static_cast<int>(it - members.begin());
  at.next = members[static_cast<size_t>((at.index + 1) % n)];
  at.prev = members[static_cast<size_t>((at.index + n - 1) % n)];
  return at;
}

// Block b (taken modulo n) of `range`, split in n blocks.
Chunk ring_block(Chunk range, int n, int b) {
  Chunk block = block_of(range.count, n, ((b % n) + n) % n);
  block.buffer = range.buffer;
  block.offset += range.offset;
  return block;
}

}  // namespace

Chunk ring_owned_block(const std::vector<int>& members, int rank, Chunk range) {
  const int n = static_cast<int>(members.size());
  return ring_block(range, n, position_in(members, rank).index + 1);
}

size_t add_ring_reduce_scatter(Schedule& s, const std::vector<int>& members, Chunk range,
                               size_t first_round) {
  const int n = static_cast<int>(members.size());
  const RingPosition at = position_in(members, s.rank);
  if (at.index < 0) return static_cast<size_t>(n - 1);
  for (int step = 0; step < n - 1; ++step) {
    Round& round = s.round_at(first_round + static_cast<size_t>(step));
    Schedule::send(round, at.next, ring_block(range, n, at.index - step));
    Schedule::recv_reduce(round, at.prev, ring_block(range, n, at.index - step - 1));
  }
  return static_cast<size_t>(n - 1);  // member k now owns block k+1, fully reduced
}

size_t add_ring_allgather(Schedule& s, const std::vector<int>& members, Chunk range,
                          size_t first_round) {
  const int n = static_cast<int>(members.size());
  const RingPosition at = position_in(members, s.rank);
  if (at.index < 0) return static_cast<size_t>(n - 1);
  for (int step = 0; step < n - 1; ++step) {
    Round& round = s.round_at(first_round + static_cast<size_t>(step));
    Schedule::send(round, at.next, ring_block(range, n, at.index + 1 - step));
    Schedule::recv_copy(round, at.prev, ring_block(range, n, at.index - step));
  }
  return static_cast<size_t>(n - 1);
}

Schedule ring_allreduce(int rank, int nranks, size_t count, const AlgorithmParams&) {
  Schedule s{rank, nranks, count, 0, {}};
  std::vector<int> everyone(static_cast<size_t>(nranks));
  for (int r = 0; r < nranks; ++r) everyone[static_cast<size_t>(r)] = r;
  const Chunk all{BufferId::work, 0, count};
  const size_t rounds = add_ring_reduce_scatter(s, everyone, all, 0);
  add_ring_allgather(s, everyone, all, rounds);
  return s;
}

}  // namespace sb
