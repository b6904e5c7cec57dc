// Recursive doubling: log2(p) rounds in which partners at distance 1, 2, 4, ... swap and reduce
// their whole buffers. Fewest rounds, so best for small messages; non-powers of two are folded.
#include "collectives/algorithms/algorithms.hpp"

namespace sb {

Schedule recursive_doubling_allreduce(int rank, int nranks, size_t count, const AlgorithmParams&) {
  Schedule s{rank, nranks, count, 0, {}};
  const Fold fold = fold_for(rank, nranks);
  fold_in(s, fold);
  const Chunk all{BufferId::work, 0, count};
  for (int mask = 1; mask < fold.pow2; mask <<= 1) {
    Round& round = s.new_round();
    if (fold.newrank < 0) continue;  // folded away: idle until fold_out
    const int partner = fold.real_rank(fold.newrank ^ mask);
    Schedule::send(round, partner, all);
    Schedule::recv_reduce(round, partner, all);
  }
  fold_out(s, fold);
  return s;
}

}  // namespace sb
