// The tables behind the device's one-launch work: the chunk table of the per-tensor scales and
// roundings (every value in exactly one chunk, no chunk across two tensors or longer than asked,
// each tensor's chunks where first_chunk says), and runs of floats to move.
#include "kernels/tensor_chunks.hpp"

#include <gtest/gtest.h>

#include <random>
#include <stdexcept>
#include <vector>

namespace sb {
namespace {

// Checks the table's invariants against the offsets it was made from.
void expect_chunks_tile_the_tensors(const std::vector<size_t>& offsets, size_t chunk) {
  const TensorChunks table = chunk_tensors(offsets, chunk);
  ASSERT_EQ(table.tensors(), offsets.size() - 1);
  ASSERT_EQ(table.begin.size(), table.chunks() + 1);
  EXPECT_EQ(table.begin.front(), 0u);
  EXPECT_EQ(table.begin.back(), offsets.back());
  for (size_t c = 0; c < table.chunks(); ++c) {
    const uint32_t t = table.tensor_of[c];
    ASSERT_LT(t, table.tensors());
    EXPECT_LT(table.begin[c], table.begin[c + 1]) << "chunk " << c << " is empty";
    EXPECT_LE(table.begin[c + 1] - table.begin[c], chunk);
    EXPECT_GE(table.begin[c], offsets[t]);
    EXPECT_LE(table.begin[c + 1], offsets[t + 1]) << "chunk " << c << " runs past its tensor";
    EXPECT_GE(c, table.first_chunk[t]);
    EXPECT_LT(c, table.first_chunk[t + 1]);
  }
  for (size_t t = 0; t < table.tensors(); ++t) {
    const uint32_t first = table.first_chunk[t], end = table.first_chunk[t + 1];
    ASSERT_LE(first, end);
    // The kernels read a tensor's extent, and its first value, from its chunks.
    EXPECT_EQ(table.begin[end] - table.begin[first], offsets[t + 1] - offsets[t]) << "tensor " << t;
    if (first < end) {
      EXPECT_EQ(table.begin[first], offsets[t]);
    }
  }
}

TEST(TensorChunks, CutTensorsAtTheirEdgesAndEveryChunkValues) {
  // The device test's tensors: 30000, 64, an empty one and 39937 values.
  const TensorChunks table = chunk_tensors({0, 30000, 30064, 30064, 70001}, 16384);
  EXPECT_EQ(table.begin, (std::vector<uint64_t>{0, 16384, 30000, 30064, 46448, 62832, 70001}));
  EXPECT_EQ(table.tensor_of, (std::vector<uint32_t>{0, 0, 1, 3, 3, 3}));
  EXPECT_EQ(table.first_chunk, (std::vector<uint32_t>{0, 2, 3, 3, 6}));
}

TEST(TensorChunks, TileAnyLayout) {
  expect_chunks_tile_the_tensors({0}, 4);
  expect_chunks_tile_the_tensors({0, 0}, 4);
  expect_chunks_tile_the_tensors({0, 0, 0, 5}, 4);
  expect_chunks_tile_the_tensors({0, 4, 8, 12}, 4);
  expect_chunks_tile_the_tensors({0, 1, 2, 3}, 1);
  std::mt19937 random(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<size_t> offsets{0};
    const int tensors = 1 + static_cast<int>(random() % 40);
    for (int t = 0; t < tensors; ++t) offsets.push_back(offsets.back() + (random() % 4 == 0 ? 0 : random() % 3000));
    expect_chunks_tile_the_tensors(offsets, 1 + random() % 700);
  }
}

TEST(TensorChunks, RefuseWhatIsNotABuffer) {
  EXPECT_THROW(chunk_tensors({}, 4), std::invalid_argument);
  EXPECT_THROW(chunk_tensors({1, 5}, 4), std::invalid_argument);
  EXPECT_THROW(chunk_tensors({0, 5, 3}, 4), std::invalid_argument);
  EXPECT_THROW(chunk_tensors({0, 5}, 0), std::invalid_argument);
}

TEST(FloatRuns, MergeWhereARunContinuesTheLastInBothBuffersAndCutLongOnes) {
  // Adjacent in both: merged; adjacent in one only: not; empty: dropped.
  EXPECT_EQ(merge_and_cut_runs({{0, 100, 4}, {4, 104, 2}, {6, 200, 3}, {9, 203, 0}, {20, 203, 1}}, 100),
            (std::vector<FloatRun>{{0, 100, 6}, {6, 200, 3}, {20, 203, 1}}));
  // Cut to the longest, the pieces where the whole run put them.
  EXPECT_EQ(merge_and_cut_runs({{10, 0, 7}, {17, 7, 3}}, 4),
            (std::vector<FloatRun>{{10, 0, 4}, {14, 4, 4}, {18, 8, 2}}));
  EXPECT_TRUE(merge_and_cut_runs({}, 4).empty());
  EXPECT_THROW(merge_and_cut_runs({{0, 0, 1}}, 0), std::invalid_argument);
}

}  // namespace
}  // namespace sb
