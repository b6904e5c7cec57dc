#pragma once
// sb-allreduce's command line: nccl-tests' flags where the meaning is the same, plus --impl,
// --out and --label. Parsing checks everything that can be checked before MPI work starts.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "collectives/allreduce_impl.hpp"
#include "kernels/dtype.hpp"

namespace sb {

// How the per-rank times of one size become the time of the row (nccl-tests' -a).
enum class TimeAggregate { rank0 = 0, mean = 1, min = 2, max = 3 };

struct AllreduceOptions {
  uint64_t min_bytes = 32ull << 20;
  uint64_t max_bytes = 32ull << 20;
  uint64_t step_factor = 0;  // 0: sizes grow by step_bytes
  uint64_t step_bytes = 1ull << 20;
  int iters = 20;
  int warmup_iters = 5;
  bool check = true;
  DataType type = DataType::float32;
  RedOp op = RedOp::sum;
  TimeAggregate aggregate = TimeAggregate::mean;
  double timeout_seconds = 300;
  std::vector<std::string> impls = {"mpi"};
  bool impls_from_all = false;  // --impl all: skip, rather than refuse, what cannot run here
  std::string out;              // empty: out/allreduce-<UTC time>-<pid>.h5
  std::string flags;  // what every rank must be given alike (common/command_line.hpp's flags_to_agree)
  std::map<std::string, std::string> labels;
  uint64_t segment_bytes = 256 << 10;  // pipelining chunk of tree and dbtree
  std::vector<Transport> transports = {Transport::mpi};  // --transport: each schedule runs on each
  int node_size = 0;                   // --node-size; 0: ranks sharing memory (MPI's view)
  int torus_x = 0, torus_y = 0;        // --torus XxY; 0: the most square
  bool list = false;  // --list: print the implementations and whether each can run, then stop
  bool print_schedule = false;  // print every rank's schedule at --minbytes, then stop

  std::vector<uint64_t> sizes() const;
};

// Throws UsageError for bad input. Returns nullopt when --help was asked for (the help is
// printed on stdout when print is true).
std::optional<AllreduceOptions> parse_allreduce_options(int argc, char** argv, bool print);

std::string_view name_of(TimeAggregate aggregate);

}  // namespace sb
