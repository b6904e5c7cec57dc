// The list of allreduce implementations the harness can run. An algorithm joins by adding a line.
#include "collectives/allreduce_impl.hpp"

#include <algorithm>
#include "collectives/baselines/baselines.hpp"
#include "collectives/schedule_allreduce.hpp"

namespace sb {

#if !SB_HAVE_CUDA
std::string nccl_unavailable(const WorldLayout&) {
  return "this build has no CUDA (rebuild with make CUDA=1 where CUDA and NCCL are installed)";
}
std::unique_ptr<AllreduceImpl> make_nccl_allreduce(MPI_Comm) { return nullptr; }
std::string mpi_cuda_unavailable(const WorldLayout&) {
  return "this build has no CUDA (rebuild with make CUDA=1 where CUDA is installed)";
}
std::unique_ptr<AllreduceImpl> make_mpi_cuda_allreduce(MPI_Comm) { return nullptr; }
#endif

AlgorithmParams algorithm_params(const ImplConfig& config) {
  AlgorithmParams params;
  params.segment = std::max<size_t>(1, config.segment_bytes / size_of(config.type));
  params.node_size = config.node_size;
  params.torus_x = config.torus_x;
  params.torus_y = config.torus_y;
  return params;
}

const std::vector<AllreduceImplInfo>& allreduce_impls() {
  static const std::vector<AllreduceImplInfo> impls = [] {
    auto anywhere = [](const WorldLayout&) { return std::string(); };
    std::vector<AllreduceImplInfo> list = {
        {.name = "mpi",
         .description = "MPI_Allreduce on host buffers",
         .unavailable = anywhere,
         .create = [](MPI_Comm comm, const ImplConfig&) { return make_mpi_allreduce(comm); }},
        {.name = "nccl",
         .description = "ncclAllReduce on device buffers",
         .unavailable = nccl_unavailable,
         .create = [](MPI_Comm comm, const ImplConfig&) { return make_nccl_allreduce(comm); },
         .memory = Memory::device},
        {.name = "mpi-cuda",
         .description = "MPI_Allreduce on device buffers (a CUDA-aware MPI)",
         .unavailable = mpi_cuda_unavailable,
         .create = [](MPI_Comm comm, const ImplConfig&) { return make_mpi_cuda_allreduce(comm); },
         .refuses_type = mpi_cuda_refuses_type,
         .memory = Memory::device},
    };
    // The schedules, on host buffers over the mpi transport.
    for (const AllreduceAlgorithm& algorithm : allreduce_algorithms())
      list.push_back({.name = algorithm.name,
                      .description = algorithm.description,
                      .unavailable = anywhere,
                      .create =
                          [&algorithm](MPI_Comm comm, const ImplConfig& config) {
                            return make_schedule_allreduce(algorithm, algorithm_params(config), config.transport,
                                                           comm);
                          },
                      .algorithm = &algorithm});
    return list;
  }();
  return impls;
}

const AllreduceImplInfo* find_allreduce_impl(std::string_view name) {
  for (const AllreduceImplInfo& info : allreduce_impls())
    if (info.name == name) return &info;
  return nullptr;
}

}  // namespace sb
