#include "collectives/check_data.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "kernels/reduce.hpp"

namespace sb {
namespace {

using Bytes = std::vector<unsigned char>;

Bytes rank_input(DataType type, RedOp op, int rank, int nranks, size_t count) {
  Bytes data(count * size_of(type));
  fill_check_input(data.data(), count, type, op, rank, nranks);
  return data;
}

// Reduces the ranks' inputs in the given order, in the datatype itself, as an algorithm would.
Bytes reduce_in_order(DataType type, RedOp op, int nranks, size_t count, const std::vector<int>& order) {
  Bytes acc = rank_input(type, op, order[0], nranks, count);
  for (size_t i = 1; i < order.size(); ++i) {
    Bytes in = rank_input(type, op, order[i], nranks, count);
    reduce_into_cpu(acc.data(), in.data(), count, type, op);
  }
  if (op == RedOp::avg) divide_cpu(acc.data(), count, type, nranks);
  return acc;
}

// A pairwise tree: (0+1)+(2+3)+..., the order recursive halving uses.
Bytes reduce_as_tree(DataType type, RedOp op, int nranks, size_t count) {
  std::vector<Bytes> parts;
  for (int r = 0; r < nranks; ++r) parts.push_back(rank_input(type, op, r, nranks, count));
  while (parts.size() > 1) {
    std::vector<Bytes> next;
    for (size_t i = 0; i + 1 < parts.size(); i += 2) {
      reduce_into_cpu(parts[i].data(), parts[i + 1].data(), count, type, op);
      next.push_back(parts[i]);
    }
    if (parts.size() % 2) next.push_back(parts.back());
    parts = next;
  }
  if (op == RedOp::avg) divide_cpu(parts[0].data(), count, type, nranks);
  return parts[0];
}

class CheckData : public ::testing::TestWithParam<int> {};

TEST_P(CheckData, ExactInEveryTypeForAnyOrderOfReduction) {
  const int nranks = GetParam();
  const size_t count = 257;
  std::vector<int> forward(static_cast<size_t>(nranks));
  std::iota(forward.begin(), forward.end(), 0);
  std::vector<int> backward(forward.rbegin(), forward.rend());
  for (DataType type : kAllDataTypes) {
    for (RedOp op : kAllRedOps) {
      for (const Bytes& result : {reduce_in_order(type, op, nranks, count, forward),
                                  reduce_in_order(type, op, nranks, count, backward),
                                  reduce_as_tree(type, op, nranks, count)}) {
        EXPECT_EQ(count_wrong(result.data(), count, type, op, nranks), 0u)
            << name_of(type) << " " << name_of(op) << " p=" << nranks;
      }
    }
  }
}

TEST_P(CheckData, ALostRankIsNoticed) {
  const int nranks = GetParam();
  if (nranks < 2) return;
  const size_t count = 257;
  std::vector<int> all_but_last(static_cast<size_t>(nranks - 1));
  std::iota(all_but_last.begin(), all_but_last.end(), 0);
  for (DataType type : kAllDataTypes) {
    for (RedOp op : {RedOp::sum, RedOp::prod, RedOp::max}) {
      const Bytes result = reduce_in_order(type, op, nranks, count, all_but_last);
      EXPECT_GT(count_wrong(result.data(), count, type, op, nranks), 0u)
          << name_of(type) << " " << name_of(op) << " p=" << nranks;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(RankCounts, CheckData, ::testing::Values(1, 2, 3, 4, 5, 7, 8, 64, 128, 300));

TEST(CheckData, InputsVaryWithRankAndElement) {
  for (DataType type : kAllDataTypes) {
    for (RedOp op : {RedOp::sum, RedOp::max}) {
      int differs_by_rank = 0, differs_by_element = 0;
      for (size_t i = 0; i < 100; ++i) {
        differs_by_rank += check_input_value(type, op, 0, 4, i) != check_input_value(type, op, 1, 4, i);
        differs_by_element += check_input_value(type, op, 0, 4, i) != check_input_value(type, op, 0, 4, i + 1);
      }
      EXPECT_GT(differs_by_rank, 50) << name_of(type);
      EXPECT_GT(differs_by_element, 50) << name_of(type);
    }
  }
}

TEST(CheckData, OneWrongElementIsCounted) {
  const size_t count = 100;
  Bytes result = reduce_as_tree(DataType::float32, RedOp::sum, 4, count);
  reinterpret_cast<float*>(result.data())[37] += 1.0f;
  EXPECT_EQ(count_wrong(result.data(), count, DataType::float32, RedOp::sum, 4), 1u);
}

}  // namespace
}  // namespace sb
