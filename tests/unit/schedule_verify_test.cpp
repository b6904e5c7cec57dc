// Every algorithm, verified symbolically for p = 1..64 and counts 0..3p+1 plus large awkward
// counts, and at cluster scale (up to 256 ranks); and the verifier itself shown to catch broken
// schedules.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <utility>

#include "collectives/algorithms/algorithms.hpp"
#include "collectives/verify.hpp"

namespace sb {
namespace {

std::vector<Schedule> build_all(const AllreduceAlgorithm& algorithm, int p, size_t count,
                                size_t segment = 3) {
  AlgorithmParams params;
  params.segment = segment;
  std::vector<Schedule> schedules;
  for (int r = 0; r < p; ++r) schedules.push_back(algorithm.build(r, p, count, params));
  return schedules;
}

// What verify(p) says for every p in 1..max_p, computed on all cores: the rank counts are
// independent, and the exhaustive sweep below is the unit suite's longest test (about a minute
// on one core). The largest, slowest counts are taken first so that no core is left with one
// big count at the end.
std::vector<std::string> for_every_rank_count(int max_p, const std::function<std::string(int)>& verify) {
  std::vector<std::string> problems(static_cast<size_t>(max_p) + 1);
  std::atomic<int> next{max_p};
  auto work = [&] {
    for (int p = next--; p >= 1; p = next--) {
      try {  // an exception must not leave a helper thread (std::terminate): it is a problem found
        problems[static_cast<size_t>(p)] = verify(p);
      } catch (const std::exception& e) {
        problems[static_cast<size_t>(p)] = std::string("threw: ") + e.what();
      }
    }
  };
  const unsigned cores = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  std::vector<std::thread> helpers;
  for (unsigned i = 1; i < cores; ++i) helpers.emplace_back(work);
  work();
  for (std::thread& helper : helpers) helper.join();
  return problems;
}

class Algorithm : public ::testing::TestWithParam<AllreduceAlgorithm> {};

TEST_P(Algorithm, CorrectForEveryRankCountAndCount) {
  const AllreduceAlgorithm& algorithm = GetParam();
  const std::vector<std::string> problems = for_every_rank_count(64, [&](int p) -> std::string {
    std::vector<size_t> counts;
    for (size_t c = 0; c <= 3 * static_cast<size_t>(p) + 1; ++c) counts.push_back(c);
    for (size_t c : {size_t{1000003}, size_t{(1u << 20) + 7}}) counts.push_back(c);
    for (size_t count : counts) {
      // Segments of 3 elements pipeline the small counts; the large ones get about ten segments.
      const size_t segment = count < 1000 ? 3 : count / 10 + 1;
      const std::string problem = verify_allreduce(build_all(algorithm, p, count, segment));
      if (!problem.empty()) return "count=" + std::to_string(count) + ": " + problem;
    }
    return {};
  });
  for (int p = 1; p <= 64; ++p) EXPECT_EQ(problems[static_cast<size_t>(p)], "") << algorithm.name << " p=" << p;
}

INSTANTIATE_TEST_SUITE_P(All, Algorithm, ::testing::ValuesIn(allreduce_algorithms()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Algorithms, RoundCounts) {
  EXPECT_EQ(ring_allreduce(0, 8, 800, {}).rounds.size(), 14u);
  EXPECT_EQ(recursive_doubling_allreduce(0, 8, 800, {}).rounds.size(), 3u);
  EXPECT_EQ(rabenseifner_allreduce(0, 8, 800, {}).rounds.size(), 6u);
  EXPECT_EQ(recursive_doubling_allreduce(0, 6, 800, {}).rounds.size(), 4u);  // fold + 2 + unfold
  EXPECT_TRUE(ring_allreduce(0, 1, 100, {}).rounds.empty());
}

TEST(Verifier, CatchesBrokenSchedules) {
  const AllreduceAlgorithm& ring = allreduce_algorithms().front();
  {  // a dropped reduction: rank 1 misses a contribution
    auto s = build_all(ring, 4, 40);
    s[1].rounds[0].steps[1].kind = StepKind::recv_copy;
    EXPECT_NE(verify_allreduce(s), "");
  }
  {  // the same past 64 ranks, where a rank's bit lies beyond the first word of the set
    auto s = build_all(ring, 128, 1280);
    s[100].rounds[0].steps[1].kind = StepKind::recv_copy;
    EXPECT_NE(verify_allreduce(s).find("is missing the contributions of"), std::string::npos);
  }
  {  // past what the verifier takes: said, not wrongly passed or failed
    EXPECT_NE(verify_allreduce(std::vector<Schedule>(1025)).find("handles 1..1024 ranks"), std::string::npos);
  }
  {  // an unmatched send
    auto s = build_all(ring, 4, 40);
    s[2].rounds[0].steps.pop_back();
    EXPECT_NE(verify_allreduce(s).find("no matching receive"), std::string::npos);
  }
  {  // a count mismatch
    auto s = build_all(ring, 4, 40);
    s[2].rounds[0].steps[1].dst.count -= 1;
    EXPECT_NE(verify_allreduce(s).find("elements, peer sends"), std::string::npos);
  }
  {  // a contribution counted twice
    auto s = build_all(ring, 3, 30);
    s[0].rounds.push_back(s[0].rounds[0]);
    s[2].rounds.resize(s[0].rounds.size());
    s[2].rounds.back() = s[2].rounds[0];
    EXPECT_NE(verify_allreduce(s), "");
  }
  {  // reading scratch that was never written
    auto s = build_all(ring, 2, 10);
    s[0].scratch_count = 10;
    Schedule::send(s[0].rounds[0], 1, {BufferId::scratch, 0, 5});
    Schedule::recv_copy(s[1].rounds[0], 0, {BufferId::work, 0, 5});
    EXPECT_NE(verify_allreduce(s).find("scratch never written"), std::string::npos);
  }
  {  // out of bounds
    auto s = build_all(ring, 2, 10);
    s[0].rounds[0].steps[0].src.offset = 8;
    EXPECT_NE(verify_allreduce(s).find("outside"), std::string::npos);
  }
}

}  // namespace
}  // namespace sb

namespace sb {
namespace {

bool is_tree(const Tree& tree) {
  const int n = static_cast<int>(tree.parent.size());
  int roots = 0;
  for (int r = 0; r < n; ++r) {
    if (tree.parent[static_cast<size_t>(r)] < 0) ++roots;
    // Following parents from any rank reaches the root within n steps: no cycles.
    int at = r, steps = 0;
    while (at >= 0 && steps <= n) at = tree.parent[static_cast<size_t>(at)], ++steps;
    if (steps > n) return false;
  }
  return roots == 1;
}

TEST(Trees, DoubleBinaryTreeSharesTheInteriorWork) {
  for (int p = 1; p <= 64; ++p) {
    const Tree a = inorder_binary_tree(p, 0), b = inorder_binary_tree(p, 1);
    ASSERT_TRUE(is_tree(a)) << p;
    ASSERT_TRUE(is_tree(b)) << p;
    for (int r = 0; r < p; ++r) {
      EXPECT_LE(a.children[static_cast<size_t>(r)].size(), 2u);
      EXPECT_LE(b.children[static_cast<size_t>(r)].size(), 2u);
      const bool interior_a = !a.children[static_cast<size_t>(r)].empty();
      const bool interior_b = !b.children[static_cast<size_t>(r)].empty();
      EXPECT_FALSE(interior_a && interior_b) << "rank " << r << " of " << p << " is interior in both trees";
    }
    EXPECT_TRUE(is_tree(binomial_tree(p)));
  }
}

TEST(Trees, PipeliningShortensTheSchedule) {
  // 64 segments down a binomial tree of 16 ranks (height 4): 64 + 4 - 1 rounds up and as many
  // down, not 64 * 4 each.
  AlgorithmParams params;
  params.segment = 1;
  size_t rounds = 0;
  for (int r = 0; r < 16; ++r) rounds = std::max(rounds, tree_allreduce(r, 16, 64, params).rounds.size());
  EXPECT_EQ(rounds, 2u * (64 + 4 - 1));
}

}  // namespace
}  // namespace sb

namespace sb {
namespace {

std::string verify_with(Schedule (*build)(int, int, size_t, const AlgorithmParams&), int p, size_t count,
                        const AlgorithmParams& params) {
  std::vector<Schedule> schedules;
  for (int r = 0; r < p; ++r) schedules.push_back(build(r, p, count, params));
  return verify_allreduce(schedules);
}

TEST(Hierarchical, CorrectOverNodeSizesIncludingUnevenNodes) {
  for (int node_size : {1, 2, 3, 4, 5, 8}) {
    for (int p = 1; p <= 40; ++p) {
      AlgorithmParams params;
      params.node_size = node_size;
      for (size_t count : {size_t{0}, size_t{1}, size_t{2}, static_cast<size_t>(p), 3 * static_cast<size_t>(p) + 1, size_t{100003}})
        ASSERT_EQ(verify_with(hierarchical_allreduce, p, count, params), "")
            << "node_size=" << node_size << " p=" << p << " count=" << count;
    }
  }
}

TEST(Torus2d, CorrectOnEveryGrid) {
  for (int p = 1; p <= 48; ++p) {
    for (int x = 1; x <= p; ++x) {
      if (p % x) continue;
      AlgorithmParams params;
      params.torus_x = x;
      params.torus_y = p / x;
      for (size_t count : {size_t{0}, size_t{1}, static_cast<size_t>(p) - 1, 3 * static_cast<size_t>(p) + 1, size_t{100003}})
        ASSERT_EQ(verify_with(torus2d_allreduce, p, count, params), "")
            << p << " ranks as " << x << "x" << p / x << ", count " << count;
    }
  }
}

TEST(Torus2d, DefaultGridIsTheMostSquare) {
  EXPECT_EQ(torus_shape(16, 0, 0).x, 4);
  EXPECT_EQ(torus_shape(12, 0, 0).x, 4);
  EXPECT_EQ(torus_shape(12, 0, 0).y, 3);
  EXPECT_EQ(torus_shape(7, 0, 0).x, 7);
  EXPECT_EQ(torus_shape(8, 2, 4).x, 2);
}

}  // namespace
}  // namespace sb

namespace sb {
namespace {

// The scale the suite is for (up to 128 GPUs, and twice that), past the exhaustive 1..64 above:
// powers of two, one short of them, and counts of ranks with odd factors (96 = 12 nodes of 8,
// 100, 120), each algorithm at the counts that leave chunks empty or uneven.
TEST(AtClusterScale, EveryAlgorithmAtUpTo256Ranks) {
  for (int p : {96, 100, 120, 127, 128, 255, 256}) {
    const size_t ranks = static_cast<size_t>(p);
    for (const AllreduceAlgorithm& algorithm : allreduce_algorithms())
      for (size_t count : {size_t{0}, size_t{1}, ranks - 1, ranks, 3 * ranks + 1, size_t{1000003}}) {
        const size_t segment = count < 1000 ? 3 : count / 10 + 1;
        ASSERT_EQ(verify_allreduce(build_all(algorithm, p, count, segment)), "")
            << algorithm.name << " p=" << p << " count=" << count;
      }
  }
}

// hier on nodes of 4 and 8 GPUs (the last node partly filled where 8 does not divide p), and
// torus2d on the grids a 128- or 256-GPU job would use.
TEST(AtClusterScale, NodesAndGridsOfLargeJobs) {
  for (int p : {96, 100, 128, 250, 256})
    for (int node_size : {4, 8}) {
      AlgorithmParams params;
      params.node_size = node_size;
      for (size_t count : {size_t{1}, static_cast<size_t>(p) + 1, size_t{1000003}})
        ASSERT_EQ(verify_with(hierarchical_allreduce, p, count, params), "")
            << "node_size=" << node_size << " p=" << p << " count=" << count;
    }
  for (auto [x, y] : {std::pair{16, 8}, std::pair{8, 16}, std::pair{32, 4}, std::pair{16, 16}, std::pair{12, 8}}) {
    AlgorithmParams params;
    params.torus_x = x;
    params.torus_y = y;
    const int p = x * y;
    for (size_t count : {size_t{1}, static_cast<size_t>(p) - 1, size_t{1000003}})
      ASSERT_EQ(verify_with(torus2d_allreduce, p, count, params), "") << p << " ranks as " << x << "x" << y;
  }
}

}  // namespace
}  // namespace sb
