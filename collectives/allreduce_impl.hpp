#pragma once
// One way of doing an allreduce, as the sb-allreduce harness sees it: a small object that owns
// its communicator and knows where its buffers live. The harness does everything else (sizes,
// data, timing, checking, tables, results), so an implementation is only this interface plus a
// line in the registry (allreduce_registry.cpp), in the spirit of nccl-tests' testColl.
#include <mpi.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/mpi_env.hpp"
#include "kernels/dtype.hpp"

namespace sb {

struct AllreduceAlgorithm;

enum class Memory { host, device };

class AllreduceImpl {
 public:
  virtual ~AllreduceImpl() = default;

  virtual Memory memory() const { return Memory::host; }

  // Runs one allreduce of `count` elements of `send` into `recv` (recv == send: in place) and
  // returns once it is complete on this rank, with the seconds it took: host clock for host
  // buffers, device timing (CUDA events) for device buffers.
  virtual double run(const void* send, void* recv, size_t count, DataType type, RedOp op) = 0;

  // Buffers in this implementation's memory, and copies between them and host memory. The
  // defaults are for host memory.
  virtual void* allocate(size_t bytes);
  virtual void release(void* buffer);
  virtual void upload(void* buffer, const void* host, size_t bytes);
  virtual void download(void* host, const void* buffer, size_t bytes);

  // One line naming the device each rank uses, for the run's header; empty for host buffers.
  virtual std::string device_name() const { return {}; }
};

// How a schedule's steps move bytes (collectives/transports/): host buffers over MPI
// point-to-point, host buffers in a node's shared memory, or device buffers over NCCL.
enum class Transport { mpi, shm, nccl };
inline constexpr Transport kAllTransports[] = {Transport::mpi, Transport::shm, Transport::nccl};
std::string_view name_of(Transport transport);
// "mpi,shm" -> {mpi, shm}; throws UsageError (naming --transport) for an unknown or repeated one.
std::vector<Transport> parse_transports(const std::string& text);

// What the harness tells an implementation when creating it; the library baselines ignore it.
struct ImplConfig {
  Transport transport = Transport::mpi;
  DataType type = DataType::float32;
  size_t segment_bytes = 256 << 10;  // pipelining chunk of tree, dbtree and the mpi transport
  int node_size = 1;                 // ranks per node, for hier
  int torus_x = 0, torus_y = 0;      // grid of torus2d; 0: the most square
};

struct AllreduceImplInfo {
  std::string_view name;
  std::string_view description;
  // Why this implementation cannot run in this build, on this machine or with this many ranks
  // per node; empty when it can. Called on every rank; must not communicate.
  std::function<std::string(const WorldLayout& layout)> unavailable;
  // Collective over `comm`.
  std::function<std::unique_ptr<AllreduceImpl>(MPI_Comm comm, const ImplConfig& config)> create;
  // The schedule behind it, for --print-schedule; null for the library baselines.
  const AllreduceAlgorithm* algorithm = nullptr;
  // Why it cannot reduce `type`, empty when it can; null: it reduces every type.
  std::function<std::string(DataType type)> refuses_type = nullptr;
  // Where a library baseline's buffers live (a schedule's follow its transport: host here).
  Memory memory = Memory::host;
};

// Every implementation known to this build, in the order `--impl all` runs them.
const std::vector<AllreduceImplInfo>& allreduce_impls();
// nullptr when there is no implementation of that name.
const AllreduceImplInfo* find_allreduce_impl(std::string_view name);

}  // namespace sb
