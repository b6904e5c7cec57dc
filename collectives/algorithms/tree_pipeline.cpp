// Tree allreduces: a reduction up a tree to its root, then a broadcast back down, both pipelined
// in segments so that every level of the tree works at once on a different segment.
//
// With S segments, the edge from a child c up to its parent carries segment s in round
// s + height(c): by then c has every one of its children's segment s (their heights are lower).
// The broadcast edge from a parent down to child c carries segment s in round
// s + depth(c) - 1, after the parent got it. Each phase thus takes S + height(root) - 1 and
// S + max depth - 1 rounds instead of S times as many.
#include <algorithm>

#include "collectives/algorithms/algorithms.hpp"

namespace sb {
namespace {

struct TreeShape {
  std::vector<int> height, depth;
  int root = 0;
};

TreeShape shape_of(const Tree& tree) {
  const int n = static_cast<int>(tree.parent.size());
  TreeShape shape{std::vector<int>(static_cast<size_t>(n), 0), std::vector<int>(static_cast<size_t>(n), 0), 0};
  // Depths from the root down; heights from the leaves up (a node's height is one more than its
  // highest child's). Repeating n times settles both whatever the numbering.
  for (int r = 0; r < n; ++r)
    if (tree.parent[static_cast<size_t>(r)] < 0) shape.root = r;
  std::vector<int> order = {shape.root};
  for (size_t i = 0; i < order.size(); ++i)
    for (int child : tree.children[static_cast<size_t>(order[i])]) {
      shape.depth[static_cast<size_t>(child)] = shape.depth[static_cast<size_t>(order[i])] + 1;
      order.push_back(child);
    }
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    for (int child : tree.children[static_cast<size_t>(*it)])
      shape.height[static_cast<size_t>(*it)] =
          std::max(shape.height[static_cast<size_t>(*it)], shape.height[static_cast<size_t>(child)] + 1);
  return shape;
}

}  // namespace

// Adds to `s` the pipelined allreduce of `range` over `tree`, starting at round `first_round`.
// Returns the number of rounds it spans (the same on every rank).
size_t add_tree_allreduce(Schedule& s, const Tree& tree, Chunk range, size_t segment,
                          size_t first_round) {
  const TreeShape shape = shape_of(tree);
  const size_t segments = (range.count + segment - 1) / segment;
  if (segments == 0) return 0;
  int max_depth = 0;
  for (int d : shape.depth) max_depth = std::max(max_depth, d);
  const size_t up_rounds = segments + static_cast<size_t>(shape.height[static_cast<size_t>(shape.root)]) - 1;
  const size_t down_rounds = segments + static_cast<size_t>(max_depth) - 1;
  auto piece = [&](size_t k) {
    const size_t offset = k * segment;
    return Chunk{range.buffer, range.offset + offset, std::min(segment, range.count - offset)};
  };
  const int me = s.rank;
  const size_t my_height = static_cast<size_t>(shape.height[static_cast<size_t>(me)]);
  const int parent = tree.parent[static_cast<size_t>(me)];
  for (size_t k = 0; k < segments; ++k) {
    for (int child : tree.children[static_cast<size_t>(me)])
      Schedule::recv_reduce(s.round_at(first_round + k + static_cast<size_t>(shape.height[static_cast<size_t>(child)])),
                            child, piece(k));
    if (parent >= 0) Schedule::send(s.round_at(first_round + k + my_height), parent, piece(k));
  }
  const size_t down = first_round + up_rounds;
  const size_t my_depth = static_cast<size_t>(shape.depth[static_cast<size_t>(me)]);
  for (size_t k = 0; k < segments; ++k) {
    if (parent >= 0) Schedule::recv_copy(s.round_at(down + k + my_depth - 1), parent, piece(k));
    for (int child : tree.children[static_cast<size_t>(me)])
      Schedule::send(s.round_at(down + k + my_depth), child, piece(k));
  }
  return up_rounds + down_rounds;
}

Schedule tree_allreduce(int rank, int nranks, size_t count, const AlgorithmParams& params) {
  Schedule s{rank, nranks, count, 0, {}};
  add_tree_allreduce(s, binomial_tree(nranks), {BufferId::work, 0, count}, params.segment, 0);
  return s;
}

Schedule dbtree_allreduce(int rank, int nranks, size_t count, const AlgorithmParams& params) {
  // Two trees, each with half of the buffer, in the same rounds: every rank is an interior node
  // of at most one of them, so the work of the interior nodes is spread over all ranks.
  Schedule s{rank, nranks, count, 0, {}};
  const Chunk first = block_of(count, 2, 0), second = block_of(count, 2, 1);
  add_tree_allreduce(s, inorder_binary_tree(nranks, 0), first, params.segment, 0);
  add_tree_allreduce(s, inorder_binary_tree(nranks, 1), second, params.segment, 0);
  return s;
}

}  // namespace sb
