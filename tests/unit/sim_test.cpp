// The simulator against what is known exactly: on a contention-free machine of one level, the
// schedules of ring, recursive doubling and Rabenseifner cost what the alpha-beta-gamma formulas
// of Thakur, Rabenseifner and Gropp (2005) say; shared links never make a schedule faster; and a
// machine file with a missing, negative or unknown figure is refused naming its line; calibrate's
// link fit recovers an exact line and survives noise without a slope.
#include <gtest/gtest.h>

#include <cmath>

#include "collectives/algorithms/algorithms.hpp"
#include "collectives/verify.hpp"
#include "common/usage_error.hpp"
#include "sim/allreduce_model.hpp"
#include "sim/calibrate.hpp"
#include "sim/fair_share.hpp"
#include "sim/machine.hpp"
#include "sim/nccl_rings.hpp"
#include "sim/schedule_sim.hpp"
#include "sim/step_model.hpp"
#include "tests/unit/cycle_grid.hpp"

namespace sb::sim {
namespace {

const AllreduceAlgorithm& algorithm(std::string_view name) {
  for (const AllreduceAlgorithm& a : allreduce_algorithms())
    if (a.name == name) return a;
  throw std::runtime_error("no algorithm " + std::string(name));
}

// alpha 3 us, beta 1 / (2 GB/s), gamma 1 / (5 GB/s): far apart, so a swapped term shows.
constexpr double kAlpha = 3e-6, kBeta = 1 / 2e9, kGamma = 1 / 5e9;

Machine flat_machine() {
  return parse_machine(
      "name flat\n"
      "level net size 0 alpha 3us bandwidth 2GB/s\n"
      "gamma float 5GB/s\n"
      "copy 10GB/s\n",
      "flat");
}

double simulate(const Machine& machine, std::string_view name, int p, size_t count, size_t segment_bytes = 0) {
  SimConfig config;
  config.segment_bytes = segment_bytes;
  return simulate_algorithm(machine, algorithm(name), AlgorithmParams{}, p, count, config).time_s;
}

TEST(SimClosedForm, RingIsTwoPMinusOneAlphaPlusBandwidthAndReductionTerms) {
  for (int p : {2, 3, 4, 5, 8, 16}) {
    const size_t count = 1920 * 1024;  // divisible by every p here
    const double n = count * 4.0;
    const double expected = 2 * (p - 1) * kAlpha + 2.0 * (p - 1) / p * n * kBeta + (p - 1.0) / p * n * kGamma;
    EXPECT_NEAR(simulate(flat_machine(), "ring", p, count), expected, expected * 1e-12) << "p=" << p;
  }
}

TEST(SimClosedForm, RecursiveDoublingIsLogPRoundsOfTheWholeVector) {
  for (int p : {2, 4, 8, 32}) {
    const size_t count = 1 << 20;
    const double n = count * 4.0, lg = std::log2(p);
    const double expected = lg * kAlpha + lg * n * kBeta + lg * n * kGamma;
    EXPECT_NEAR(simulate(flat_machine(), "rd", p, count), expected, expected * 1e-12) << "p=" << p;
  }
}

TEST(SimClosedForm, RabenseifnerIsTwoLogPAlphaPlusRingBandwidth) {
  for (int p : {2, 4, 8, 64}) {
    const size_t count = 1 << 20;
    const double n = count * 4.0, lg = std::log2(p);
    const double expected = 2 * lg * kAlpha + 2.0 * (p - 1) / p * n * kBeta + (p - 1.0) / p * n * kGamma;
    EXPECT_NEAR(simulate(flat_machine(), "rabenseifner", p, count), expected, expected * 1e-12) << "p=" << p;
  }
}

TEST(SimPipelining, SegmentsHideTheReductionBehindTheTransfer) {
  // Ring at 4 ranks, 4 MiB: with 64 KiB pieces each round costs about max(beta, gamma) per byte
  // plus one piece's reduction, not beta + gamma.
  const size_t count = 1 << 20;
  const double whole = simulate(flat_machine(), "ring", 4, count, 0);
  const double pieces = simulate(flat_machine(), "ring", 4, count, 64 << 10);
  EXPECT_LT(pieces, whole);
  const double n = count * 4.0;
  const double floor = 6 * kAlpha + 1.5 * n * kBeta;  // the transfers alone
  EXPECT_GT(pieces, floor);
}

// Two levels, nodes of two ranks; with `shared`, the two ranks of a node share one NIC and the
// node's bus is limited; without, every rank has its own NIC and the bus is free. (Each level has
// its own ports, so a two-level machine is not comparable with the flat one.)
Machine two_level_machine(bool shared) {
  return parse_machine(std::string("name two-level\n") +
                           "level node size 2 alpha 3us bandwidth 2GB/s" + (shared ? " bus 3GB/s" : "") + "\n" +
                           "level net size 0 alpha 3us bandwidth 2GB/s share " + (shared ? "group" : "rank") + "\n" +
                           "gamma float 5GB/s\ncopy 10GB/s\n",
                       "two-level");
}
Machine shared_machine() { return two_level_machine(true); }

TEST(SimEngine, ACoreThatCopiesCannotReduceAtTheSameTime) {
  // With `engine cpu` the receiver copies each piece and then reduces it, so pieces no longer hide
  // the reduction: the ring costs the unpipelined closed form whatever the segment.
  const Machine cpu = parse_machine("name cpu\nlevel net size 0 alpha 3us bandwidth 2GB/s engine cpu\ngamma float 5GB/s\ncopy 10GB/s\n", "cpu");
  const size_t count = 1920 * 1024;
  const double n = count * 4.0;
  const int p = 4;
  const double closed = 2 * (p - 1) * kAlpha + 2.0 * (p - 1) / p * n * kBeta + (p - 1.0) / p * n * kGamma;
  EXPECT_NEAR(simulate(cpu, "ring", p, count, 64 << 10), closed, closed * 1e-9);
  EXPECT_LT(simulate(flat_machine(), "ring", p, count, 64 << 10), closed * 0.95);  // a DMA engine overlaps them
}

// The flat machine with a cache, cached rates, 2 cores per node and fixed call costs.
Machine host_machine(const std::string& extra = "") {
  return parse_machine(
      "name host\n"
      "level node size 0 alpha 3us bandwidth 2GB/s cached 4GB/s\n"
      "gamma float 5GB/s cached 10GB/s\n"
      "copy 10GB/s\n"
      "cache 8M\n" + extra,
      "host");
}

double predict(const Machine& machine, const std::string& impl, int p, size_t count) {
  AllreduceCase c;
  c.impl = impl;
  c.nranks = p;
  c.count = count;
  c.segment_bytes = 1 << 30;  // whole messages: the closed forms
  return predict_allreduce(machine, c).time_s;
}

TEST(SimHostEffects, CachedRatesApplyWhenTheWorkingSetFits) {
  // Ring at 2 ranks: 4 x bytes x 2 ranks must fit in 8 MiB: 1 MiB does, 2 MiB does not.
  const auto ring2 = [](double alpha, double beta, double gamma, double n) { return 2 * alpha + n * beta + n / 2 * gamma; };
  EXPECT_NEAR(predict(host_machine(), "ring", 2, 1 << 18), ring2(3e-6, 1 / 4e9, 1 / 10e9, 1 << 20), 1e-12);
  EXPECT_NEAR(predict(host_machine(), "ring", 2, 1 << 19), ring2(3e-6, 1 / 2e9, 1 / 5e9, 2 << 20), 1e-12);
}

TEST(SimHostEffects, RanksBeyondTheCoresShareThem) {
  // Four ranks on a node of two cores: every node rate halves and every latency doubles.
  const double alone = predict(host_machine(), "ring", 4, 1 << 20);
  const Machine halved = parse_machine(
      "name half\nlevel node size 0 alpha 6us bandwidth 1GB/s cached 2GB/s\ngamma float 2.5GB/s cached 5GB/s\n"
      "copy 5GB/s\ncache 8M\n",
      "half");
  EXPECT_NEAR(predict(host_machine("cores 2\n"), "ring", 4, 1 << 20), predict(halved, "ring", 4, 1 << 20), 1e-12);
  EXPECT_NEAR(predict(host_machine("cores 4\n"), "ring", 4, 1 << 20), alone, 1e-12);  // no more ranks than cores
}

TEST(SimHostEffects, ATransportsCallCostIsPaidOncePerCall) {
  const double plain = predict(host_machine(), "ring", 4, 1 << 20);
  EXPECT_NEAR(predict(host_machine("call mpi 7us\n"), "ring", 4, 1 << 20), plain + 7e-6, 1e-12);
  EXPECT_NEAR(predict(host_machine("call mpi 7us\n"), "mpi", 4, 1 << 20), predict(host_machine(), "mpi", 4, 1 << 20), 1e-12);
}

TEST(SimContention, SharedLinksNeverMakeAScheduleFaster) {
  for (const AllreduceAlgorithm& a : allreduce_algorithms())
    for (int p : {2, 3, 4, 6, 8})
      for (size_t count : {size_t{1000}, size_t{1} << 18}) {
        AlgorithmParams params;
        params.node_size = 2;
        SimConfig config;
        const double free = simulate_algorithm(two_level_machine(false), a, params, p, count, config).time_s;
        const double shared = simulate_algorithm(two_level_machine(true), a, params, p, count, config).time_s;
        EXPECT_GE(shared, free * (1 - 1e-12)) << a.name << " p=" << p << " count=" << count;
      }
  // And the sharing is felt: at 4 ranks the ring crosses each NIC twice at once (0->1 and 2->3
  // inside nodes ride the bus; 1->2 and 3->0 share the NICs with nothing), so check rd, whose
  // second round sends both ranks of a node over the one NIC.
  SimConfig config;
  const double free = simulate_algorithm(two_level_machine(false), algorithm("rd"), {}, 4, 1 << 18, config).time_s;
  const double shared = simulate_algorithm(two_level_machine(true), algorithm("rd"), {}, 4, 1 << 18, config).time_s;
  EXPECT_GT(shared, free * 1.2);
}

TEST(SimContention, TwoMessagesThroughOneLinkShareIt) {
  // Flows 0 and 1 share link 0 (capacity 2); flow 2 has link 1 (capacity 3) alone, which flow 1
  // also crosses: max-min gives 1, 1 and 2.
  FlowLinks a, b, c;
  a.add(0);
  b.add(0);
  b.add(1);
  c.add(1);
  const std::vector<double> rates = max_min_rates({a, b, c}, {2.0, 3.0});
  EXPECT_DOUBLE_EQ(rates[0], 1.0);
  EXPECT_DOUBLE_EQ(rates[1], 1.0);
  EXPECT_DOUBLE_EQ(rates[2], 2.0);
}

TEST(NcclRings, AreACorrectAllreduceForEveryNodeSizeAndCount) {
  for (int node_size : {1, 2, 3, 4, 8})
    for (int p = 1; p <= 40; ++p)
      for (size_t count : {size_t{0}, size_t{1}, static_cast<size_t>(p), 3 * static_cast<size_t>(p) + 1, size_t{100003}}) {
        std::vector<Schedule> schedules;
        for (int r = 0; r < p; ++r) schedules.push_back(nccl_rings_allreduce(r, p, count, node_size, node_size));
        ASSERT_EQ(verify_allreduce(schedules), "") << "node_size=" << node_size << " p=" << p << " count=" << count;
      }
}

TEST(NcclRings, UseEveryNicOfANodeWhereOneRingUsesOne) {
  // Nodes of 8 ranks with a NIC each: 8 rings leave each node through 8 NICs, a single ring
  // through one, so across 8 nodes the rings are several times faster on a large buffer.
  const Machine dgx = parse_machine(
      "name dgx\nlevel nvlink size 8 alpha 2us bandwidth 450GB/s\nlevel ib size 0 alpha 5us bandwidth 50GB/s\n"
      "gamma float 1000GB/s\ncopy 1000GB/s\n",
      "dgx");
  AllreduceCase c;
  c.nranks = 64;
  c.count = 64 << 20;  // 256 MiB
  c.transport = Transport::nccl;
  c.impl = "ring";
  const double one_ring = predict_allreduce(dgx, c).time_s;
  c.impl = "nccl";
  const double rings = predict_allreduce(dgx, c).time_s;
  EXPECT_LT(rings * 4, one_ring);
  // Across 8 nodes the rings are bound by the NICs: 2 (p-1)/p x 256 MiB over 8 x 50 GB/s per node.
  EXPECT_GT(rings, 2.0 * 63 / 64 * (256 << 20) / 8 / 50e9);
  EXPECT_EQ(predict_allreduce(dgx, c).modelled_as, "rings@nccl");
  // A small allreduce over many nodes is latency-bound on rings (2(p-1) steps): NCCL's tree wins.
  c.count = 16 << 10;
  EXPECT_EQ(predict_allreduce(dgx, c).modelled_as, "dbtree@nccl");
  c.nranks = 8;  // inside one node there is no tree to choose
  EXPECT_EQ(predict_allreduce(dgx, c).modelled_as, "rings@nccl");
}

// The simulator holds every rank's schedule at once: a scale past kMostStepsPriced is refused
// before any is built (ring at 4096 ranks had taken 5 GB; NCCL's rings at 4096, past 24 GB).
TEST(SimBudget, TheStepsToPriceAreCountedAndTooManyAreRefused) {
  const Machine flat = flat_machine();
  AllreduceCase c;
  c.impl = "ring";
  c.nranks = 16;
  c.count = 1 << 20;
  // The ring's ranks are alike: three ranks' steps times the ranks are every rank's.
  size_t every = 0;
  for (int r = 0; r < c.nranks; ++r)
    for (const Round& round : algorithm("ring").build(r, c.nranks, c.count, AlgorithmParams{}).rounds)
      every += round.steps.size();
  EXPECT_EQ(steps_to_price(flat, c), every);
  // 2 (p - 1) rounds of a send and a receive on each rank: about 4 p^2 steps.
  c.nranks = 2048;
  EXPECT_NO_THROW(check_priceable(flat, c));
  c.nranks = 4096;
  EXPECT_GT(steps_to_price(flat, c), kMostStepsPriced);
  EXPECT_THROW(check_priceable(flat, c), UsageError);
  EXPECT_THROW(predict_allreduce(flat, c), UsageError);  // and at once, without pricing it
  // What a library is priced as counts: Open MPI's Rabenseifner at 2^20 ranks, NCCL's 16 rings.
  c.impl = "mpi";
  c.nranks = 1 << 20;
  EXPECT_THROW(check_priceable(flat, c), UsageError);
  c.impl = "rd";
  c.nranks = 1 << 10;
  EXPECT_NO_THROW(check_priceable(flat, c));
  c.impl = "nccl";
  c.node_size = 16;
  c.transport = Transport::nccl;
  c.nranks = 512;  // 16 rings of 4 (p - 1) steps on each rank, 16.7 million (the tree's are fewer)
  EXPECT_NO_THROW(check_priceable(flat, c));
  c.nranks = 1024;
  EXPECT_THROW(check_priceable(flat, c), UsageError);
}

TEST(SimMachine, LevelsPlaceRanksConsecutively) {
  const Machine m = parse_machine(
      "name m\nlevel gpu size 4 alpha 1us bandwidth 1GB/s\nlevel leaf size 2 alpha 2us bandwidth 1GB/s\n"
      "level spine size 0 alpha 3us bandwidth 1GB/s\ngamma float 1GB/s\ncopy 1GB/s\n",
      "m");
  EXPECT_EQ(m.level_between(0, 3), 0u);
  EXPECT_EQ(m.level_between(3, 4), 1u);
  EXPECT_EQ(m.level_between(0, 7), 1u);
  EXPECT_EQ(m.level_between(0, 8), 2u);
  EXPECT_EQ(m.ranks_per_group(1), 8u);
  EXPECT_EQ(m.ranks_per_group(2), 0u);
}

TEST(SimMachine, FormatReadsBack) {
  const Machine m = shared_machine();
  const Machine again = parse_machine(format_machine(m), "again");
  ASSERT_EQ(again.levels.size(), 2u);
  EXPECT_DOUBLE_EQ(again.levels[0].bus, 3e9);
  EXPECT_EQ(again.levels[1].share, Share::group);
  EXPECT_DOUBLE_EQ(again.levels[1].alpha_s, 3e-6);
  EXPECT_DOUBLE_EQ(again.reduce_rate(DataType::float32), 5e9);
}

std::string error_of(const std::string& text) {
  try {
    parse_machine(text, "bad.machine");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(SimMachine, BadFiguresAreRefusedNamingTheLine) {
  const std::string head = "name m\n";
  const std::string tail = "gamma float 1GB/s\ncopy 1GB/s\n";
  EXPECT_EQ(error_of(head + "level l size 2 alpha 1us\n" + tail), "machine 'bad.machine' line 2: missing 'bandwidth'");
  EXPECT_EQ(error_of(head + "level l size 2 alpha -1us bandwidth 1GB/s\n" + tail),
            "machine 'bad.machine' line 2: alpha '-1us' is not a time from 0 to 1s (e.g. 2us, 1.5ms)");
  EXPECT_EQ(error_of(head + "level l size 2 alpha 1us bandwidth 1GB/s\ngamma float -5GB/s\ncopy 1GB/s\n"),
            "machine 'bad.machine' line 3: gamma '-5GB/s' is not a rate of at least 1KB/s (e.g. 12.5GB/s, 100Gb/s)");
  EXPECT_EQ(error_of(head + "level l size 2 alpha 1us bandwidth 1GB/s links\n" + tail),
            "machine 'bad.machine' line 2: 'links' has no value");
  EXPECT_EQ(error_of(head + "level l size 2 alpha 1us bandwidth 1GB/s colour red\n" + tail),
            "machine 'bad.machine' line 2: unknown key 'colour'");
  EXPECT_EQ(error_of(head + "level l size 2 alpha 1us bandwidth 1GB/s\ncopy 1GB/s\n"), "machine 'bad.machine' has no 'gamma' line");
  EXPECT_EQ(error_of(head + tail), "machine 'bad.machine' has no 'level' line");
  EXPECT_EQ(error_of(head + "level l size 2 alpha 1us bandwidth 1GB/s engine warp\n" + tail),
            "machine 'bad.machine' line 2: engine must be dma or cpu, not 'warp'");
  EXPECT_EQ(error_of(head + "level l size 2 alpha 1us bandwidth 1GB/s\n" + tail + "cache lots\n"),
            "machine 'bad.machine' line 5: cache 'lots' is not a size (e.g. 32M)");
}

TEST(SimCalibrate, AFitRecoversAnExactLine) {
  const std::vector<uint64_t> sizes = {1024, 65536, 1 << 20};
  std::vector<double> seconds;
  for (uint64_t n : sizes) seconds.push_back(2e-6 + static_cast<double>(n) / 5e9);
  const LinkFit fit = fit_link(sizes, seconds);
  EXPECT_NEAR(fit.alpha_s, 2e-6, 1e-12);
  EXPECT_NEAR(fit.bandwidth, 5e9, 1e3);
  EXPECT_NEAR(fit_bandwidth(sizes, seconds, 2e-6), 5e9, 1e3);
}

// On a loaded machine the larger messages can time no slower than the small ones: the fit's slope
// is then not positive, and a bandwidth of 0 made a description sb-dryrun refused to read.
TEST(SimCalibrate, NoiseWithoutASlopeGivesTheLargestMessagesBandwidth) {
  const std::vector<uint64_t> sizes = {1024, 65536, 1 << 20};
  const std::vector<double> falling = {300e-6, 200e-6, 100e-6};
  const LinkFit fit = fit_link(sizes, falling);
  EXPECT_DOUBLE_EQ(fit.bandwidth, (1 << 20) / 100e-6);
  EXPECT_GE(fit.alpha_s, 0);
  EXPECT_DOUBLE_EQ(fit_bandwidth(sizes, falling, 150e-6), (1 << 20) / 100e-6);
}

// NaN passed "> 0" (NaN images/s made every simulated step NaN); hexadecimal passed for decimal.
TEST(SimMachine, NumbersAreFiniteAndDecimal) {
  const std::string head = "name m\nlevel l size 2 alpha 1us bandwidth 1GB/s\ngamma float 1GB/s\ncopy 1GB/s\n";
  EXPECT_EQ(error_of(head + "compute resnet50 nan 256\n"), "machine 'bad.machine' line 5: compute needs images/s per rank of at least 0.001");
  EXPECT_EQ(error_of(head + "compute resnet50 inf 256\n"), "machine 'bad.machine' line 5: compute needs images/s per rank of at least 0.001");
  EXPECT_EQ(error_of("name m\nlevel l size 2 alpha 0x1p-20 bandwidth 1GB/s\ngamma float 1GB/s\ncopy 1GB/s\n"),
            "machine 'bad.machine' line 2: alpha '0x1p-20' is not a time from 0 to 1s (e.g. 2us, 1.5ms)");
  EXPECT_EQ(error_of("name m\nlevel l size 2 alpha 1us bandwidth 1e300TB/s\ngamma float 1GB/s\ncopy 1GB/s\n"),
            "machine 'bad.machine' line 2: bandwidth '1e300TB/s' is not a rate of at least 1KB/s (e.g. 12.5GB/s, 100Gb/s)");
  EXPECT_EQ(error_of(head + "compute resnet50 2800 256\n"), "(accepted)");
}

// Figures past any machine's: a latency of 1e300us was priced into a 300-digit prediction, and
// 10^12 links wrapped to a negative int, on which the flow solver never ended.
TEST(SimMachine, FiguresPastAnyMachinesAreRefused) {
  const std::string tail = "gamma float 1GB/s\ncopy 1GB/s\n";
  auto level = [&](const std::string& figures) { return error_of("name m\nlevel l " + figures + "\n" + tail); };
  EXPECT_EQ(level("size 2 alpha 1e300us bandwidth 1GB/s"),
            "machine 'bad.machine' line 2: alpha '1e300us' is not a time from 0 to 1s (e.g. 2us, 1.5ms)");
  EXPECT_EQ(level("size 2 alpha 1us bandwidth 1e-300GB/s"),
            "machine 'bad.machine' line 2: bandwidth '1e-300GB/s' is not a rate of at least 1KB/s (e.g. 12.5GB/s, 100Gb/s)");
  EXPECT_EQ(level("size 2 alpha 1us bandwidth 1GB/s links 1000000000000"),
            "machine 'bad.machine' line 2: links '1000000000000' is not a whole number from 1 to 1073741824");
  EXPECT_EQ(level("size 10000000000 alpha 1us bandwidth 1GB/s"),
            "machine 'bad.machine' line 2: size '10000000000' is not a whole number from 0 to 1073741824");
  EXPECT_EQ(error_of("name m\nlevel l size 2 alpha 1us bandwidth 1GB/s\n" + tail + "compute resnet50 1e-300 256\n"),
            "machine 'bad.machine' line 5: compute needs images/s per rank of at least 0.001");
  EXPECT_EQ(error_of("name m\nlevel l size 2 alpha 1us bandwidth 1GB/s\n" + tail + "compute resnet50 0.001 256\n"),
            "(accepted)");
  // The edges are machines.
  EXPECT_EQ(level("size 1073741824 alpha 1s bandwidth 1KB/s links 1073741824"), "(accepted)");
}

// A step model of ring allreduces on flat_machine(), which it prices on, and so holds.
struct FlatStepModel {
  explicit FlatStepModel(int nranks) : machine(flat_machine()), model(machine, ring_at(nranks)) {}
  static AllreduceCase ring_at(int nranks) {
    AllreduceCase c;
    c.impl = "ring";
    c.nranks = nranks;
    return c;
  }
  const Machine machine;
  StepModel model;
};

// Backward of 10 ms handing over t3, t2, t1, t0 at 0.4, 2.1, 7 and 9.5 ms.
BackwardProfile four_tensor_profile() {
  BackwardProfile profile;
  profile.backward_s = 0.010;
  profile.tensors = {{"t0", 1000}, {"t1", 250000}, {"t2", 4000}, {"t3", 1000000}};
  profile.ready_s = {0.0095, 0.007, 0.0021, 0.0004};
  return profile;
}

// Horovod's loop whose cycles cost nothing (one rank: no negotiation, no allreduce) keeps to its
// grid of ticks: each gradient is taken by the first tick at or after it.
TEST(SimStep, LiveCyclesThatCostNothingKeepToTheirTicks) {
  const BackwardProfile profile = four_tensor_profile();
  FlatStepModel flat(1);
  StepModel& model = flat.model;
  const CyclePrediction live = predict_cycle_step(profile, 0.003, 128, model);
  // Cycles at 0, 3, 6, 9, 12 ms: 3 ms takes t3 and t2, 9 ms t1, 12 ms t0.
  EXPECT_EQ(tensors_of(live.plan), (std::vector<std::vector<size_t>>{{3, 2}, {1}, {0}}));
  EXPECT_EQ(live.cycles(), 5u) << "the step ends with the cycle that finds the last gradient";
  const size_t ticks[] = {1, 3, 4};
  for (size_t b = 0; b < 3 && b < live.plan.buckets.size(); ++b) {
    EXPECT_EQ(live.plan.buckets[b].tick, ticks[b]) << "bucket " << b;
    EXPECT_NEAR(live.step.bucket_start_s[b], 0.003 * static_cast<double>(ticks[b]), 1e-15) << "bucket " << b;
  }
  EXPECT_NEAR(live.step.iteration_s, 0.012, 1e-15) << "the last gradient waits for the 12 ms cycle";
  EXPECT_EQ(live.step.negotiation_s, 0);
  EXPECT_THROW(predict_step(profile, live.plan, model, true), std::invalid_argument) << "a cycle plan is not replayed";
  EXPECT_THROW(predict_cycle_step(profile, profile.backward_s / kMostCycles / 2, 128, model), UsageError);
}

// At 4 ranks every cycle negotiates first, then reduces what it found; a bucket starts no sooner
// than its tick on the grid, after its cycle's negotiation, once the one before has ended, and
// holds only gradients handed over before its cycle began.
TEST(SimStep, EachLiveCycleNegotiatesThenReducesWhatItFound) {
  const BackwardProfile profile = four_tensor_profile();
  FlatStepModel flat(4);
  StepModel& model = flat.model;
  const double negotiation = model.flags.seconds(2);  // one 64-bit word: a bit for each of the 4 tensors
  EXPECT_GT(negotiation, 0);
  const CyclePrediction live = predict_cycle_step(profile, 0.003, 128, model);
  const StepPrediction& p = live.step;
  ASSERT_EQ(p.bucket_start_s.size(), live.plan.buckets.size());
  ASSERT_GE(live.plan.buckets.size(), 2u);
  EXPECT_DOUBLE_EQ(p.bucket_start_s[0], 0.003 + negotiation) << "the 0 ms cycle finds nothing; the 3 ms one t3 and t2";
  double thread_free = 0;
  for (size_t b = 0; b < live.plan.buckets.size(); ++b) {
    const Bucket& bucket = live.plan.buckets[b];
    EXPECT_GE(p.bucket_start_s[b], static_cast<double>(bucket.tick) * 0.003 + negotiation - 1e-15) << "bucket " << b;
    EXPECT_GE(p.bucket_start_s[b], thread_free) << "bucket " << b;
    for (const BucketPiece& piece : bucket.pieces)
      EXPECT_LE(profile.ready_s[piece.tensor], p.bucket_start_s[b] - negotiation) << "bucket " << b;
    thread_free = p.bucket_end_s[b];
  }
  EXPECT_NEAR(p.negotiation_s, static_cast<double>(live.cycles()) * negotiation, 1e-15) << "a negotiation a cycle";
  EXPECT_GT(p.communication_s, p.negotiation_s) << "the negotiations are part of the communication";
  EXPECT_GT(p.exposed_s, negotiation) << "t0, handed over at 9.5 ms, waits for a cycle, its negotiation and allreduce";
  // Without overlap the cycle strategy's plan is reduced after backward, as any plan is.
  const StepPrediction after = predict_step(profile, live.plan, model, false);
  EXPECT_DOUBLE_EQ(after.bucket_start_s[0], profile.backward_s);
}

// Buckets that take longer than the cycles: the next cycle starts when the last one's work ends
// and fuses everything handed over meanwhile, so the loop fuses fewer, larger buckets than its
// grid of ticks would, and negotiates less often than every cycle time.
TEST(SimStep, ALiveLoopThatFallsBehindFusesWhatItFindsAtOnce) {
  BackwardProfile profile;
  profile.backward_s = 0.010;
  for (int k = 0; k < 8; ++k) {
    profile.tensors.push_back({std::string("t").append(std::to_string(k)), 1000000});  // 4 MB: ms each at 2 GB/s
    profile.ready_s.push_back(0.0095 - 0.001 * k);  // t7 first, at 2.5 ms
  }
  FlatStepModel flat(4);
  StepModel& model = flat.model;
  const CyclePrediction live = predict_cycle_step(profile, 0.001, 128, model);
  const CyclePrediction grid = cycle_grid(profile.tensors, profile.ready_s, 0.001, 128);  // the same, at no cost
  EXPECT_EQ(grid.plan.buckets.size(), 8u) << "one gradient a tick";
  EXPECT_LT(live.plan.buckets.size(), grid.plan.buckets.size());
  EXPECT_GT(live.plan.buckets.back().pieces.size(), 1u) << "the late cycles take several gradients at once";
  EXPECT_LT(live.cycles(), grid.cycles()) << "fewer cycles than ticks: the late ones started when the work ended";
  size_t fused = 0;
  for (const Bucket& b : live.plan.buckets) fused += b.pieces.size();
  EXPECT_EQ(fused, profile.tensors.size()) << "every gradient once";
}

}  // namespace
}  // namespace sb::sim
