// Many allreduces in a row with no barrier between them, the input changed right after each call
// returns: what the shm transport's counters, lazy reads of inputs and double-buffered outboxes
// must survive (a peer still reading, or an outbox half reused too early, shows as a wrong
// value). Every schedule, every transport, a count small enough for the outbox and one too big.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/allreduce_impl.hpp"

namespace sb {
namespace {

void run_back_to_back(const AllreduceImplInfo& info, Transport transport, size_t count) {
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  ImplConfig config;
  config.type = DataType::int32;
  config.segment_bytes = 64 * sizeof(int32_t);
  config.node_size = 2;
  config.transport = transport;
  std::unique_ptr<AllreduceImpl> impl = info.create(MPI_COMM_WORLD, config);
  const size_t bytes = count * sizeof(int32_t);
  void* send = impl->allocate(bytes);
  void* recv = impl->allocate(bytes);
  std::vector<int32_t> input(count), output(count);
  int64_t wrong = 0;
  for (int call = 0; call < 60; ++call) {
    for (size_t i = 0; i < count; ++i) input[i] = static_cast<int32_t>(rank * 1000 + i + 7 * call);
    const bool in_place = call % 3 == 2;
    impl->upload(in_place ? recv : send, input.data(), bytes);
    impl->run(in_place ? recv : send, recv, count, DataType::int32, RedOp::sum);
    impl->download(output.data(), recv, bytes);
    for (size_t i = 0; i < count; ++i) {
      const int64_t want = 1000LL * nranks * (nranks - 1) / 2 + static_cast<int64_t>(nranks) * (static_cast<int64_t>(i) + 7 * call);
      if (output[i] != want) ++wrong;
    }
  }
  impl->release(send);
  impl->release(recv);
  EXPECT_EQ(wrong, 0) << info.name << "@" << name_of(transport) << " count " << count;
}

TEST(BackToBack, EveryScheduleKeepsEveryResultWithNoBarrierBetweenCalls) {
  for (const AllreduceImplInfo& info : allreduce_impls()) {
    if (!info.algorithm) continue;
    for (Transport transport : {Transport::mpi, Transport::shm})
      for (size_t count : {size_t{5}, size_t{3000}, size_t{20000}}) run_back_to_back(info, transport, count);
  }
}

}  // namespace
}  // namespace sb
