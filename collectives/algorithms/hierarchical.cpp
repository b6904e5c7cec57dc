// Hierarchical allreduce for ranks grouped in nodes (consecutive ranks, node_size per node; the
// last node may be smaller): the buffer is cut into node_size shards, and in each node shard i is
// owned by local rank i % (ranks on that node).
//   1. intra-node reduce-scatter: every local rank sends each shard to its owner (one round);
//   2. inter-node: the owners of shard i, one per node, ring-allreduce it (2(nodes-1) rounds);
//   3. intra-node allgather: every owner sends its shards to the other local ranks (one round).
// Only step 2 crosses nodes, and it carries 1/node_size of the data per rank.
#include <algorithm>

#include "collectives/algorithms/algorithms.hpp"
#include "common/text_fields.hpp"
#include "common/usage_error.hpp"

namespace sb {
Schedule hierarchical_allreduce(int rank, int nranks, size_t count, const AlgorithmParams& params) {
  Schedule s{rank, nranks, count, 0, {}};
  const int node_size = std::clamp(params.node_size, 1, nranks);
  const int nodes = (nranks + node_size - 1) / node_size;
  auto node_first = [&](int node) { return node * node_size; };
  auto node_ranks = [&](int node) { return std::min(node_size, nranks - node_first(node)); };
  auto owner = [&](int node, int shard) { return node_first(node) + shard % node_ranks(node); };
  const int my_node = rank / node_size;
  auto shard_chunk = [&](int shard) { return block_of(count, node_size, shard); };

  // 1. Shards to their owners inside the node.
  Round& scatter = s.round_at(0);
  for (int shard = 0; shard < node_size; ++shard) {
    const int to = owner(my_node, shard);
    if (to == rank) {
      for (int r = node_first(my_node); r < node_first(my_node) + node_ranks(my_node); ++r)
        if (r != rank) Schedule::recv_reduce(scatter, r, shard_chunk(shard));
    } else {
      Schedule::send(scatter, to, shard_chunk(shard));
    }
  }
  // 2. Each shard around the ring of its owners, one per node.
  const size_t inter_rounds = 2 * static_cast<size_t>(nodes - 1);
  for (int shard = 0; shard < node_size; ++shard) {
    if (owner(my_node, shard) != rank) continue;
    std::vector<int> owners;
    for (int node = 0; node < nodes; ++node) owners.push_back(owner(node, shard));
    const size_t half = add_ring_reduce_scatter(s, owners, shard_chunk(shard), 1);
    add_ring_allgather(s, owners, shard_chunk(shard), 1 + half);
  }
  // 3. Owners hand their reduced shards to the rest of the node.
  Round& gather = s.round_at(1 + inter_rounds);
  for (int shard = 0; shard < node_size; ++shard) {
    const int from = owner(my_node, shard);
    if (from == rank) {
      for (int r = node_first(my_node); r < node_first(my_node) + node_ranks(my_node); ++r)
        if (r != rank) Schedule::send(gather, r, shard_chunk(shard));
    } else {
      Schedule::recv_copy(gather, from, shard_chunk(shard));
    }
  }
  return s;
}

TorusShape torus_shape(int nranks, int x, int y) {
  if (x > 0 && y > 0) return {x, y};
  // The most square grid: the largest divisor of nranks not above its square root.
  int rows = 1;
  for (int d = 1; d * d <= nranks; ++d)
    if (nranks % d == 0) rows = d;
  return {nranks / rows, rows};
}

TorusShape parse_torus(const std::string& text) {
  const size_t x = text.find('x');
  const auto columns = parse_whole_integer(text.substr(0, x));
  const auto rows = x == std::string::npos ? std::nullopt : parse_whole_integer(text.substr(x + 1));
  if (!columns || !rows || *columns < 1 || *rows < 1 || *columns > 1 << 20 || *rows > 1 << 20)
    throw UsageError("--torus: '" + text + "' is not XxY with positive X and Y (e.g. 4x2)");
  return {static_cast<int>(*columns), static_cast<int>(*rows)};
}

Schedule torus2d_allreduce(int rank, int nranks, size_t count, const AlgorithmParams& params) {
  // Mikami et al. (2018): ranks in a grid of X columns by Y rows (rank = row * X + column).
  // Reduce-scatter along each row, allreduce each row-shard along its column, allgather along
  // each row. Rows are rings of X ranks, columns rings of Y.
  Schedule s{rank, nranks, count, 0, {}};
  const TorusShape shape = torus_shape(nranks, params.torus_x, params.torus_y);
  const int column = rank % shape.x, row = rank / shape.x;
  std::vector<int> my_row, my_column;
  for (int c = 0; c < shape.x; ++c) my_row.push_back(row * shape.x + c);
  for (int r = 0; r < shape.y; ++r) my_column.push_back(r * shape.x + column);
  const Chunk all{BufferId::work, 0, count};
  size_t round = add_ring_reduce_scatter(s, my_row, all, 0);
  // Every rank of a column owns the same block of its row, so the column shares one shard.
  const Chunk shard = ring_owned_block(my_row, rank, all);
  round += add_ring_reduce_scatter(s, my_column, shard, round);
  round += add_ring_allgather(s, my_column, shard, round);
  add_ring_allgather(s, my_row, all, round);
  return s;
}

}  // namespace sb
