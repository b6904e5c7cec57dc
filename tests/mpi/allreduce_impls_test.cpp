// Every allreduce implementation that can run here, for every datatype and operation, out of
// place and in place, against a naive reference: all ranks' inputs gathered and folded in rank
// order on the host. Run by tests/run at 1 to 5 ranks.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "collectives/allreduce_impl.hpp"
#include "collectives/check_data.hpp"
#include "kernels/reduce.hpp"

namespace sb {
namespace {

using Bytes = std::vector<unsigned char>;

struct World {
  int rank = 0, nranks = 1;
  World() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  }
};

// The reference: every rank's input, gathered, folded in rank order in the datatype.
Bytes naive_allreduce(const Bytes& mine, size_t count, DataType type, RedOp op) {
  const World world;
  Bytes all(mine.size() * static_cast<size_t>(world.nranks));
  MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_BYTE, all.data(),
                static_cast<int>(mine.size()), MPI_BYTE, MPI_COMM_WORLD);
  Bytes result(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(mine.size()));
  for (int r = 1; r < world.nranks; ++r)
    reduce_into_cpu(result.data(), all.data() + static_cast<size_t>(r) * mine.size(), count, type, op);
  if (op == RedOp::avg) divide_cpu(result.data(), count, type, world.nranks);
  return result;
}

bool available_everywhere(const AllreduceImplInfo& info) {
  int missing = info.unavailable(discover_world_layout()).empty() ? 0 : 1, any = 0;
  MPI_Allreduce(&missing, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any == 0;
}

void check_impl(const AllreduceImplInfo& info, DataType type, RedOp op, Transport transport) {
  const World world;
  // A small segment, so that the pipelined algorithms pipeline even at these counts.
  // Nodes of 2 ranks, so that hier has more than one node on one host.
  ImplConfig config;
  config.type = type;
  config.segment_bytes = 3 * size_of(type);
  config.node_size = 2;
  config.transport = transport;
  std::unique_ptr<AllreduceImpl> impl = info.create(MPI_COMM_WORLD, config);
  {
    {
      for (size_t count : {size_t{1}, size_t{7}, size_t{1000}, size_t{4099}}) {
        const size_t bytes = count * size_of(type);
        Bytes input(bytes), output(bytes, 0xee);
        fill_check_input(input.data(), count, type, op, world.rank, world.nranks);
        const Bytes reference = naive_allreduce(input, count, type, op);
        ASSERT_EQ(count_wrong(reference.data(), count, type, op, world.nranks), 0u)
            << "the reference itself is wrong";

        void* send = impl->allocate(bytes);
        void* recv = impl->allocate(bytes);
        impl->upload(send, input.data(), bytes);
        impl->run(send, recv, count, type, op);
        impl->download(output.data(), recv, bytes);
        EXPECT_EQ(std::memcmp(output.data(), reference.data(), bytes), 0)
            << info.name << " out of place " << name_of(type) << " " << name_of(op) << " count " << count;
        Bytes untouched(bytes);
        impl->download(untouched.data(), send, bytes);
        EXPECT_EQ(untouched, input) << info.name << ": out of place changed its input";

        impl->upload(recv, input.data(), bytes);
        impl->run(recv, recv, count, type, op);
        impl->download(output.data(), recv, bytes);
        EXPECT_EQ(std::memcmp(output.data(), reference.data(), bytes), 0)
            << info.name << " in place " << name_of(type) << " " << name_of(op) << " count " << count;
        impl->release(send);
        impl->release(recv);
      }
    }
  }
}

class AllreduceImpls : public ::testing::TestWithParam<std::tuple<DataType, RedOp>> {};

TEST_P(AllreduceImpls, MatchTheNaiveReference) {
  const auto [type, op] = GetParam();
  int tested = 0;
  for (const AllreduceImplInfo& info : allreduce_impls()) {
    if (!available_everywhere(info)) continue;  // e.g. nccl without a GPU: covered by gpu-check
    if (info.refuses_type && !info.refuses_type(type).empty()) continue;  // mpi-cuda's fp16
    check_impl(info, type, op, Transport::mpi);
    // The schedules also run on the shm transport, and on nccl where ncclAllReduce can run
    // (one GPU per rank); the library baselines have no transport.
    if (info.algorithm) check_impl(info, type, op, Transport::shm);
    if (info.algorithm && available_everywhere(*find_allreduce_impl("nccl"))) check_impl(info, type, op, Transport::nccl);
    ++tested;
  }
  EXPECT_GE(tested, 1) << "no implementation could run";
}

INSTANTIATE_TEST_SUITE_P(
    EveryTypeAndOp, AllreduceImpls,
    ::testing::Combine(::testing::ValuesIn(kAllDataTypes), ::testing::ValuesIn(kAllRedOps)),
    [](const auto& info) {
      return std::string(name_of(std::get<0>(info.param))) + "_" +
             std::string(name_of(std::get<1>(info.param)));
    });

}  // namespace
}  // namespace sb
