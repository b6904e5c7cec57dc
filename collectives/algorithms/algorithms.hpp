#pragma once
// The allreduce algorithms, each a pure function from (rank, nranks, count) to that rank's
// schedule, correct for every nranks >= 1 and every count (remainders, count < nranks).
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/schedule.hpp"

namespace sb {

// What an algorithm may be tuned by, beyond (rank, nranks, count).
struct AlgorithmParams {
  // Pipelining chunk of the algorithms that pipeline (tree, dbtree), in elements.
  size_t segment = 65536;
  // Ranks per node for hier (consecutive ranks share a node; the last node may be smaller).
  int node_size = 1;
  // Grid of torus2d, X columns by Y rows with X * Y = nranks; 0 x 0: the most square.
  int torus_x = 0, torus_y = 0;
};

struct TorusShape {
  int x, y;
};
// The grid torus2d runs on: x by y when both are set, otherwise the most square x >= y.
TorusShape torus_shape(int nranks, int x, int y);
// "4x2" -> {4, 2}; throws UsageError (naming --torus) for anything but positive X and Y.
TorusShape parse_torus(const std::string& text);

struct AllreduceAlgorithm {
  std::string_view name;
  std::string_view description;
  Schedule (*build)(int rank, int nranks, size_t count, const AlgorithmParams& params);
};

Schedule ring_allreduce(int rank, int nranks, size_t count, const AlgorithmParams& params);
Schedule recursive_doubling_allreduce(int rank, int nranks, size_t count, const AlgorithmParams& params);
Schedule rabenseifner_allreduce(int rank, int nranks, size_t count, const AlgorithmParams& params);
Schedule tree_allreduce(int rank, int nranks, size_t count, const AlgorithmParams& params);
Schedule dbtree_allreduce(int rank, int nranks, size_t count, const AlgorithmParams& params);
Schedule hierarchical_allreduce(int rank, int nranks, size_t count, const AlgorithmParams& params);
Schedule torus2d_allreduce(int rank, int nranks, size_t count, const AlgorithmParams& params);

// The ring phases over a subset of ranks (`members`, in ring order) on a range of the buffer,
// placed from round `first_round`; each returns the rounds it spans (members.size() - 1) on
// every rank, member or not. After the reduce-scatter, ring_owned_block is this rank's block.
size_t add_ring_reduce_scatter(Schedule& s, const std::vector<int>& members, Chunk range, size_t first_round);
size_t add_ring_allgather(Schedule& s, const std::vector<int>& members, Chunk range, size_t first_round);
Chunk ring_owned_block(const std::vector<int>& members, int rank, Chunk range);

// A rooted tree over ranks 0..n-1: parent[r] (-1 for the root) and children[r].
struct Tree {
  std::vector<int> parent;
  std::vector<std::vector<int>> children;
};
Tree binomial_tree(int nranks);
// The in-order binary tree whose leaves are the even ranks; shifted by one rank (rank r in the
// role of r+1), its leaves are the odd ranks: the two trees of the double binary tree.
Tree inorder_binary_tree(int nranks, int shift);
// Appends the pipelined reduce + broadcast of `range` over `tree` to `s`, from round
// `first_round`; returns the rounds it spans, the same on every rank (tree_pipeline.cpp).
size_t add_tree_allreduce(Schedule& s, const Tree& tree, Chunk range, size_t segment, size_t first_round);

const std::vector<AllreduceAlgorithm>& allreduce_algorithms();

// The usual fold of a non-power-of-two rank count onto the largest power of two below it: of the
// first 2*rem ranks, each even rank hands its data to the odd rank above it and sits out; the
// pow2 ranks left are renumbered 0..pow2-1. fold_in/fold_out add the rounds before and after.
struct Fold {
  int pow2 = 1;      // largest power of two <= nranks
  int rem = 0;       // nranks - pow2
  int newrank = -1;  // rank among the pow2, or -1 for a rank that sits out
  int real_rank(int folded) const { return folded < rem ? 2 * folded + 1 : folded + rem; }
};
Fold fold_for(int rank, int nranks);
void fold_in(Schedule& schedule, const Fold& fold);
void fold_out(Schedule& schedule, const Fold& fold);

}  // namespace sb
