// Rabenseifner's allreduce: a reduce-scatter by recursive halving (each round swaps half of what
// is left with the partner at distance pow2/2, pow2/4, ...) and an allgather by recursive
// doubling that retraces it. Bandwidth-optimal like the ring, in 2 log2(p) rounds.
// Non-powers of two are folded.
#include <utility>

#include "collectives/algorithms/algorithms.hpp"

namespace sb {

Schedule rabenseifner_allreduce(int rank, int nranks, size_t count, const AlgorithmParams&) {
  Schedule s{rank, nranks, count, 0, {}};
  const Fold fold = fold_for(rank, nranks);
  fold_in(s, fold);
  if (fold.newrank < 0) {
    // Folded away: idle through the 2 log2(pow2) rounds of the others.
    for (int mask = 1; mask < fold.pow2; mask <<= 1) {
      s.new_round();
      s.new_round();
    }
  } else {
    // Block range [lo, hi) of pow2 blocks -> element chunk.
    auto blocks = [&](int lo, int hi) {
      const Chunk first = block_of(count, fold.pow2, lo);
      const Chunk last = block_of(count, fold.pow2, hi - 1);
      return Chunk{BufferId::work, first.offset, last.offset + last.count - first.offset};
    };
    std::vector<std::pair<int, int>> kept;  // the range kept at each halving, to retrace
    int lo = 0, hi = fold.pow2;
    for (int mask = fold.pow2 / 2; mask >= 1; mask /= 2) {
      const int partner = fold.real_rank(fold.newrank ^ mask);
      const int mid = (lo + hi) / 2;
      const bool lower = (fold.newrank & mask) == 0;
      Round& round = s.new_round();
      Schedule::send(round, partner, lower ? blocks(mid, hi) : blocks(lo, mid));
      Schedule::recv_reduce(round, partner, lower ? blocks(lo, mid) : blocks(mid, hi));
      kept.emplace_back(lo, hi);
      if (lower) hi = mid; else lo = mid;
    }
    // Rank now owns block range [lo, hi) fully reduced; double it back up.
    for (int mask = 1; mask < fold.pow2; mask <<= 1) {
      const int partner = fold.real_rank(fold.newrank ^ mask);
      const auto [parent_lo, parent_hi] = kept.back();
      kept.pop_back();
      const bool lower = lo == parent_lo;
      Round& round = s.new_round();
      Schedule::send(round, partner, blocks(lo, hi));
      Schedule::recv_copy(round, partner, lower ? blocks(hi, parent_hi) : blocks(parent_lo, lo));
      lo = parent_lo;
      hi = parent_hi;
    }
  }
  fold_out(s, fold);
  return s;
}

}  // namespace sb
