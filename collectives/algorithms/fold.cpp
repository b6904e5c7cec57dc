#include "collectives/algorithms/algorithms.hpp"

namespace sb {

Fold fold_for(int rank, int nranks) {
  Fold fold;
  while (fold.pow2 * 2 <= nranks) fold.pow2 *= 2;
  fold.rem = nranks - fold.pow2;
  if (rank < 2 * fold.rem)
    fold.newrank = rank % 2 ? rank / 2 : -1;
  else
    fold.newrank = rank - fold.rem;
  return fold;
}

void fold_in(Schedule& s, const Fold& fold) {
  if (fold.rem == 0) return;
  Round& round = s.new_round();
  if (s.rank >= 2 * fold.rem) return;
  const Chunk all{BufferId::work, 0, s.count};
  if (s.rank % 2 == 0)
    Schedule::send(round, s.rank + 1, all);
  else
    Schedule::recv_reduce(round, s.rank - 1, all);
}

void fold_out(Schedule& s, const Fold& fold) {
  if (fold.rem == 0) return;
  Round& round = s.new_round();
  if (s.rank >= 2 * fold.rem) return;
  const Chunk all{BufferId::work, 0, s.count};
  if (s.rank % 2 == 0)
    Schedule::recv_copy(round, s.rank + 1, all);
  else
    Schedule::send(round, s.rank - 1, all);
}

const std::vector<AllreduceAlgorithm>& allreduce_algorithms() {
  static const std::vector<AllreduceAlgorithm> algorithms = {
      {"ring", "ring reduce-scatter + allgather, 2(p-1) rounds", ring_allreduce},
      {"rd", "recursive doubling, log2(p) rounds of whole buffers", recursive_doubling_allreduce},
      {"rabenseifner", "recursive-halving reduce-scatter + recursive-doubling allgather",
       rabenseifner_allreduce},
      {"tree", "binomial-tree reduce + broadcast, pipelined in segments", tree_allreduce},
      {"dbtree", "double binary tree (NCCL-style), each tree half the data, pipelined", dbtree_allreduce},
      {"hier", "intra-node reduce-scatter, inter-node ring on each shard, intra-node allgather",
       hierarchical_allreduce},
      {"torus2d", "2D torus: row reduce-scatter, column allreduce, row allgather", torus2d_allreduce},
  };
  return algorithms;
}

}  // namespace sb
