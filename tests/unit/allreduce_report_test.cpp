// The arithmetic behind sb-allreduce's rows: time aggregation, bandwidths, the row text.
#include <gtest/gtest.h>

#include <iterator>
#include <sstream>

#include "bench/allreduce/sweep.hpp"
#include "bench/allreduce/table.hpp"
#include "collectives/bandwidth.hpp"

namespace sb {
namespace {

TEST(Bandwidth, NcclTestsDefinitions) {
  EXPECT_DOUBLE_EQ(allreduce_busbw_factor(1), 0.0);
  EXPECT_DOUBLE_EQ(allreduce_busbw_factor(2), 1.0);
  EXPECT_DOUBLE_EQ(allreduce_busbw_factor(4), 1.5);
  EXPECT_DOUBLE_EQ(allreduce_busbw_factor(8), 1.75);
  EXPECT_DOUBLE_EQ(allreduce_busbw_factor(128), 2.0 * 127 / 128);
  EXPECT_DOUBLE_EQ(algbw_GBps(1'000'000'000, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(algbw_GBps(1 << 20, 0.0), 0.0);
}

TEST(SummariseTimes, AggregatesAsAsked) {
  // Two ranks, three iterations each: rank 0 means 2 us, rank 1 means 4 us.
  const std::vector<double> times = {1, 2, 3, 3, 4, 5};
  PlacementResult r;
  summarise_times(r, times, 2, 3, TimeAggregate::mean, 4'000'000);
  EXPECT_DOUBLE_EQ(r.time_us, 3);
  EXPECT_DOUBLE_EQ(r.rank_min_us, 2);
  EXPECT_DOUBLE_EQ(r.rank_max_us, 4);
  EXPECT_DOUBLE_EQ(r.median_us, 4);  // slowest rank per iteration: 3, 4, 5
  EXPECT_DOUBLE_EQ(r.p99_us, 5);
  EXPECT_DOUBLE_EQ(r.algbw_GBps, 4'000'000 / 3e-6 / 1e9);
  EXPECT_DOUBLE_EQ(r.busbw_GBps, r.algbw_GBps * 1.0);
  summarise_times(r, times, 2, 3, TimeAggregate::rank0, 1);
  EXPECT_DOUBLE_EQ(r.time_us, 2);
  summarise_times(r, times, 2, 3, TimeAggregate::min, 1);
  EXPECT_DOUBLE_EQ(r.time_us, 2);
  summarise_times(r, times, 2, 3, TimeAggregate::max, 1);
  EXPECT_DOUBLE_EQ(r.time_us, 4);
}

TEST(Table, RowHasTheNcclTestsColumns) {
  AllreduceOptions options;
  SizeResult size;
  size.bytes = 1024;
  size.count = 256;
  size.out_of_place.time_us = 12.5;
  size.out_of_place.algbw_GBps = 0.08;
  size.out_of_place.busbw_GBps = 0.12;
  size.out_of_place.wrong = 0;
  size.in_place = size.out_of_place;
  size.in_place.wrong = -1;
  const std::string row = format_table_row(size, options);
  std::istringstream words(row);
  std::vector<std::string> columns{std::istream_iterator<std::string>(words), {}};
  EXPECT_EQ(columns, (std::vector<std::string>{"1024", "256", "float", "sum", "-1", "12.50",
                                                "0.08", "0.12", "0", "12.50", "0.08", "0.12",
                                                "N/A"}));
}

TEST(Table, BestScheduleOverMpi) {
  // Schedules as sb-allreduce names them, name@transport; the baselines have no transport.
  auto impl = [](std::string name, double busbw) {
    ImplResult r;
    r.name = name;
    if (const size_t at = name.find('@'); at != std::string::npos) r.transport = name.substr(at + 1);
    SizeResult size;
    size.out_of_place.busbw_GBps = busbw;
    r.sizes = {size};
    return r;
  };
  EXPECT_DOUBLE_EQ(best_schedule_over_mpi({impl("mpi", 2), impl("ring@mpi", 3), impl("rd@shm", 5), impl("nccl", 50)}, 0), 2.5);
  EXPECT_DOUBLE_EQ(best_schedule_over_mpi({impl("ring@mpi", 3), impl("rd@shm", 5)}, 0), 0);  // no baseline
  EXPECT_DOUBLE_EQ(best_schedule_over_mpi({impl("mpi", 2), impl("nccl", 5)}, 0), 0);  // no schedule
  // Schedules on device buffers are not compared with MPI_Allreduce on host buffers.
  EXPECT_DOUBLE_EQ(best_schedule_over_mpi({impl("mpi", 2), impl("ring@nccl", 50)}, 0), 0);
  EXPECT_DOUBLE_EQ(best_schedule_over_mpi({impl("mpi", 2), impl("ring@mpi", 3)}, 1), 0);  // no such size
}

TEST(Table, FooterFigures) {
  ImplResult impl;
  SizeResult a, b;
  a.out_of_place.busbw_GBps = 1;
  a.in_place.busbw_GBps = 3;
  a.out_of_place.wrong = 2;
  a.in_place.wrong = -1;
  b.out_of_place.busbw_GBps = 2;
  b.in_place.busbw_GBps = 2;
  b.out_of_place.wrong = 0;
  b.in_place.wrong = 1;
  impl.sizes = {a, b};
  EXPECT_DOUBLE_EQ(average_busbw(impl), 2.0);
  EXPECT_EQ(total_wrong(impl), 3);
}

}  // namespace
}  // namespace sb
