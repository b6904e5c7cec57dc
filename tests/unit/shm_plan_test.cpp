// The shm transport's plans: what they decide for a known case (ring on two ranks), and a
// single-process execution of every rank's plan on real data for every algorithm, in and out of
// place, with and without nodes, against the exact sum: the same plan the transport runs, with
// shared memory replaced by plain arrays and MPI by a message list.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <tuple>

#include "collectives/algorithms/algorithms.hpp"
#include "collectives/transports/shm_plan.hpp"

namespace sb {
namespace {

auto everyone_on_node = [](int) { return true; };

TEST(ShmPlan, RingOnTwoRanksOutOfPlaceReadsInputsAndFillsNothing) {
  const Schedule schedule = ring_allreduce(0, 2, 10, {});
  const ShmPlan plan = plan_shm(schedule, /*in_place=*/false, everyone_on_node);
  ASSERT_EQ(plan.rounds.size(), 2u);
  // Round 0: rank 0 hands block 0 (elements 0..4) over straight from its input, and reduces
  // block 1 of its own input and of rank 1's into its result in one pass.
  const ShmRound& first = plan.rounds[0];
  ASSERT_EQ(first.sends.size(), 1u);
  EXPECT_EQ(first.sends[0].source, ShmSource::input);
  EXPECT_EQ(first.sends[0].offset, 0u);
  EXPECT_TRUE(first.fill.empty());
  EXPECT_TRUE(first.work_readers.empty());
  ASSERT_EQ(first.receives.size(), 1u);
  EXPECT_FALSE(first.receives[0].staged);
  ASSERT_EQ(first.receives[0].pieces.size(), 1u);
  EXPECT_EQ(first.receives[0].pieces[0].apply, ShmApply::reduce_input);
  // Round 1: block 1, now reduced, is read from the working buffer; block 0 is copied in.
  const ShmRound& second = plan.rounds[1];
  EXPECT_EQ(second.sends[0].source, ShmSource::work);
  EXPECT_EQ(second.work_readers, std::vector<int>{1});
  EXPECT_EQ(second.receives[0].pieces[0].apply, ShmApply::copy);
  EXPECT_TRUE(plan.final_fill.empty());
  EXPECT_EQ(plan.input_readers, (std::vector<std::pair<int, size_t>>{{1, 0}}));
}

TEST(ShmPlan, InPlaceReadsOnlyTheWorkingBuffer) {
  const ShmPlan plan = plan_shm(ring_allreduce(1, 3, 100, {}), /*in_place=*/true, everyone_on_node);
  for (const ShmRound& round : plan.rounds) {
    for (const ShmSend& send : round.sends) EXPECT_EQ(send.source, ShmSource::work);
    for (const ShmReceive& receive : round.receives)
      for (const ShmPiece& piece : receive.pieces) EXPECT_NE(piece.apply, ShmApply::reduce_input);
  }
  EXPECT_TRUE(plan.input_readers.empty());
}

TEST(ShmPlan, OneRankCopiesItsInputAtTheEnd) {
  const ShmPlan plan = plan_shm(ring_allreduce(0, 1, 7, {}), /*in_place=*/false, everyone_on_node);
  ASSERT_EQ(plan.final_fill.size(), 1u);
  EXPECT_EQ(plan.final_fill[0].offset, 0u);
  EXPECT_EQ(plan.final_fill[0].count, 7u);
}

TEST(ShmPlan, ResolveRefusesSchedulesThatDoNotMatch) {
  ShmPlan plan = plan_shm(ring_allreduce(0, 2, 10, {}), false, everyone_on_node);
  std::vector<std::vector<ShmSendRecord>> records(2);  // rank 1 says it sends nothing
  EXPECT_FALSE(resolve_shm_sources(plan, 0, records));
}

TEST(ShmPlan, SmallSchedulesSendThroughTheOutboxAndWaitForNobody) {
  const ShmPlan plan = plan_shm(ring_allreduce(0, 3, 9, {}), /*in_place=*/false, everyone_on_node, 64);
  size_t offset = 0;
  for (const ShmRound& round : plan.rounds) {
    EXPECT_TRUE(round.work_readers.empty());
    for (const ShmSend& send : round.sends) {
      EXPECT_EQ(send.source, ShmSource::outbox);
      EXPECT_EQ(send.outbox_offset, offset);  // slots follow one another through the call
      offset += send.count;
    }
  }
  EXPECT_TRUE(plan.input_readers.empty());
  // Sends that do not all fit leave the outbox alone.
  const ShmPlan big = plan_shm(ring_allreduce(0, 3, 9000, {}), false, everyone_on_node, 64);
  for (const ShmRound& round : big.rounds)
    for (const ShmSend& send : round.sends) EXPECT_NE(send.source, ShmSource::outbox);
}

// Runs every rank's plan on int32 data in one process, round by round, in the transport's
// order: fills and outbox copies; direct receives (straight out of the peer's arrays) and staged
// copies; then, once everybody has read, the staged and off-node pieces. Returns the ranks'
// results.
std::vector<std::vector<int32_t>> run_plans(const AllreduceAlgorithm& algorithm, int p, size_t count,
                                            bool in_place, int node_size, size_t outbox_elements) {
  AlgorithmParams params;
  params.segment = 3;
  params.node_size = node_size;
  std::vector<ShmPlan> plans;
  for (int r = 0; r < p; ++r)
    plans.push_back(plan_shm(algorithm.build(r, p, count, params), in_place,
                             [&](int peer) { return peer / node_size == r / node_size; }, outbox_elements));
  std::vector<std::vector<ShmSendRecord>> records(static_cast<size_t>(p));
  for (int r = 0; r < p; ++r) records[static_cast<size_t>(r)] = shm_send_records(plans[static_cast<size_t>(r)]);
  for (int r = 0; r < p; ++r)
    if (!resolve_shm_sources(plans[static_cast<size_t>(r)], r, records)) throw std::runtime_error("unresolved");

  std::vector<std::vector<int32_t>> input(static_cast<size_t>(p)), work(static_cast<size_t>(p)),
      outbox(static_cast<size_t>(p), std::vector<int32_t>(outbox_elements, -555555));
  for (int r = 0; r < p; ++r) {
    for (size_t i = 0; i < count; ++i) input[static_cast<size_t>(r)].push_back(static_cast<int32_t>(1000 * r + i));
    // Out of place, the working buffer starts as garbage that must never show through.
    work[static_cast<size_t>(r)] = in_place ? input[static_cast<size_t>(r)] : std::vector<int32_t>(count, -777777);
  }
  auto source = [&](int rank, ShmSource s) -> std::vector<int32_t>& {
    if (s == ShmSource::outbox) return outbox[static_cast<size_t>(rank)];
    return s == ShmSource::input && !in_place ? input[static_cast<size_t>(rank)] : work[static_cast<size_t>(rank)];
  };
  auto land = [&](int rank, const ShmReceive& receive, const int32_t* data) {
    auto& mine = work[static_cast<size_t>(rank)];
    const auto& own_input = source(rank, ShmSource::input);
    for (const ShmPiece& piece : receive.pieces)
      for (size_t i = 0; i < piece.count; ++i) {
        const int32_t v = data[piece.from + i];
        int32_t& out = mine[piece.offset + i];
        out = piece.apply == ShmApply::copy ? v : piece.apply == ShmApply::reduce_into ? out + v : own_input[piece.offset + i] + v;
      }
  };

  size_t rounds = 0;
  for (const ShmPlan& plan : plans) rounds = std::max(rounds, plan.rounds.size());
  for (size_t index = 0; index < rounds; ++index) {
    // Off-node messages, by (from, to, nth), as their senders' buffers are at the start of the round.
    std::map<std::tuple<int, int, int>, std::vector<int32_t>> messages;
    std::vector<std::vector<std::vector<int32_t>>> staged(static_cast<size_t>(p));
    for (int r = 0; r < p; ++r) {
      if (index >= plans[static_cast<size_t>(r)].rounds.size()) continue;
      for (const Chunk& fill : plans[static_cast<size_t>(r)].rounds[index].fill)
        for (size_t i = 0; i < fill.count; ++i)
          work[static_cast<size_t>(r)][fill.offset + i] = input[static_cast<size_t>(r)][fill.offset + i];
      for (const ShmSend& send : plans[static_cast<size_t>(r)].rounds[index].sends)
        if (send.source == ShmSource::outbox)
          for (size_t i = 0; i < send.count; ++i)
            outbox[static_cast<size_t>(r)][send.outbox_offset + i] = source(r, send.holder)[send.offset + i];
    }
    for (int r = 0; r < p; ++r) {
      if (index >= plans[static_cast<size_t>(r)].rounds.size()) continue;
      for (const ShmSend& send : plans[static_cast<size_t>(r)].rounds[index].sends)
        if (!send.on_node) {
          const auto& from = source(r, send.source);
          messages[{r, send.peer, send.nth}].assign(from.begin() + static_cast<std::ptrdiff_t>(send.offset),
                                                    from.begin() + static_cast<std::ptrdiff_t>(send.offset + send.count));
        }
    }
    for (int r = 0; r < p; ++r) {
      if (index >= plans[static_cast<size_t>(r)].rounds.size()) continue;
      for (const ShmReceive& receive : plans[static_cast<size_t>(r)].rounds[index].receives) {
        if (!receive.on_node) {
          staged[static_cast<size_t>(r)].push_back(messages.at({receive.peer, r, receive.nth}));
          continue;
        }
        const int32_t* data = source(receive.peer, receive.source).data() + receive.peer_offset;
        if (receive.staged)
          staged[static_cast<size_t>(r)].emplace_back(data, data + receive.count);
        else
          land(r, receive, data);
      }
    }
    for (int r = 0; r < p; ++r) {
      if (index >= plans[static_cast<size_t>(r)].rounds.size()) continue;
      size_t next = 0;
      for (const ShmReceive& receive : plans[static_cast<size_t>(r)].rounds[index].receives)
        if (receive.staged) land(r, receive, staged[static_cast<size_t>(r)][next++].data());
    }
  }
  for (int r = 0; r < p; ++r)
    for (const Chunk& fill : plans[static_cast<size_t>(r)].final_fill)
      for (size_t i = 0; i < fill.count; ++i)
        work[static_cast<size_t>(r)][fill.offset + i] = input[static_cast<size_t>(r)][fill.offset + i];
  return work;
}

class ShmPlanRun : public ::testing::TestWithParam<AllreduceAlgorithm> {};

TEST_P(ShmPlanRun, EveryRankEndsWithTheExactSum) {
  const AllreduceAlgorithm& algorithm = GetParam();
  for (int p = 1; p <= 9; ++p)
    for (size_t count : {size_t{0}, size_t{1}, size_t{5}, static_cast<size_t>(2 * p + 1), size_t{61}})
      for (bool in_place : {false, true})
        for (int node_size : {p, 2, 3})
          for (size_t outbox : {size_t{0}, size_t{40}, size_t{1000}}) {
          const auto results = run_plans(algorithm, p, count, in_place, node_size, outbox);
          for (int r = 0; r < p; ++r)
            for (size_t i = 0; i < count; ++i) {
              int32_t want = 0;
              for (int q = 0; q < p; ++q) want += static_cast<int32_t>(1000 * q + i);
              ASSERT_EQ(results[static_cast<size_t>(r)][i], want)
                  << algorithm.name << " p=" << p << " count=" << count << (in_place ? " in place" : " out of place")
                  << " node_size=" << node_size << " outbox=" << outbox << " rank " << r << " element " << i;
            }
        }
}

INSTANTIATE_TEST_SUITE_P(All, ShmPlanRun, ::testing::ValuesIn(allreduce_algorithms()),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace sb
