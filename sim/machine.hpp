#pragma once
// A machine as the simulator sees it: a hierarchy of levels (GPUs or cores in a node, nodes under
// a switch, switches under a spine), each with its links' latency and bandwidth and whether those
// links are private to a rank or shared, plus the reduction and copy rates, read from a small
// text file (format in sim/README.md):
//
//   name dgx-h100-ib
//   source NVLink 4: 18 links x 25 GB/s per direction per GPU (NVIDIA H100 datasheet)
//   level nvlink  size 8   alpha 2us  bandwidth 450GB/s                        # GPUs per node
//   level ib      size 0   alpha 5us  bandwidth 50GB/s  share rank             # nodes, any number
//   gamma float 1500GB/s
//   copy 1500GB/s
//   shm alpha 1us bandwidth 9GB/s      # the shm transport's one-copy reads inside level 0
//   compute resnet50 2800 256          # images/s per rank at a per-rank batch
//   cores 64                           # cores of a node, for host ranks that outnumber them
//   call shm 4us                       # a transport's fixed cost per collective call
//
// Host memory makes rates depend on size: a collective whose buffers fit in the last-level cache
// (`cache 32M`) copies and reduces faster. Each memory-bound rate (a level's bandwidth and bus,
// gamma, copy, shm) may carry a second figure, `cached RATE` (`cached-bus` for the bus), used when
// the collective's working set on a node (4 x bytes x the node's ranks) fits.
//
// Ranks are placed consecutively: ranks 0..size0-1 share the first group of level 0, and so on.
// Two ranks talk over the innermost level whose group holds both.
#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kernels/dtype.hpp"

namespace sb::sim {

// Who shares a level's port (its links, in each direction).
enum class Share {
  rank,   // every rank has its own port at this level (NVSwitch, one NIC per GPU)
  group,  // the ranks of one group of the level below share one port (a node's NIC)
};

// Who moves a message's bytes: a DMA engine (NIC, NVLink, copy engine) alongside the receiver's
// reductions, or the receiver's own core (MPI's single copy between processes of a node), which
// then copies and reduces one after the other.
enum class Engine { dma, cpu };

struct Level {
  std::string name;
  int size = 0;             // level 0: ranks per group; above: groups of the level below; 0: unbounded
  double alpha_s = 0;       // latency of one message
  double bandwidth = 0;     // bytes/s per link per direction
  int links = 1;            // links in a port
  Share share = Share::rank;
  double bus = 0;           // bytes/s through a whole group of this level at once; 0: no limit
  double cached_bandwidth = 0, cached_bus = 0;  // when the working set fits in the cache; 0: as above
  Engine engine = Engine::dma;
  double port_bandwidth() const { return bandwidth * links; }
};

struct ComputeRate {
  double images_per_s = 0;  // per rank, forward + backward + update
  int batch = 0;            // per-rank batch it was measured at
};

struct Machine {
  std::string name;
  std::vector<std::string> sources;      // where the figures come from
  std::vector<Level> levels;             // innermost first
  std::map<DataType, double> gamma;      // reduction rate, bytes of one operand per second
  double copy = 0;                       // local copy rate, bytes/s
  double shm_alpha_s = 0, shm_bandwidth = 0;  // the shm transport inside level 0; 0: not described
  double cache_bytes = 0;                // last-level cache of a node; 0: no cached rates
  int cores = 0;                         // cores of a node; 0: unknown (never oversubscribed)
  std::map<std::string, double> call_s;  // fixed cost of one collective call, by transport (mpi, shm, nccl)
  std::map<DataType, double> cached_gamma;
  double cached_copy = 0, cached_shm_bandwidth = 0;
  std::map<std::string, ComputeRate> compute;  // by model name

  // Ranks in one group of `level` (the product of the sizes up to it); 0 when unbounded.
  size_t ranks_per_group(size_t level) const;
  // The innermost level whose group holds both ranks.
  size_t level_between(int a, int b) const;
  // The group of `level` that holds `rank`.
  size_t group_of(int rank, size_t level) const;
  // The reduction rate of a type; throws UsageError naming the machine when it has none.
  double reduce_rate(DataType type) const;
  bool has_shm() const { return shm_bandwidth > 0; }
  // Whether a working set of this many bytes on one node fits in the cache.
  bool fits_in_cache(double bytes) const { return cache_bytes > 0 && bytes <= cache_bytes; }
  // This machine with its cached rates in place of the others (where it has them).
  Machine in_cache() const;
  // The share of a core each of `ranks` host ranks of a node gets: cores / ranks, at most 1.
  double core_share(int ranks) const { return cores > 0 && ranks > cores ? static_cast<double>(cores) / ranks : 1.0; }
  // The ranks of a collective of nranks that share one node (level 0's group).
  int ranks_per_node(int nranks) const { return levels.front().size > 0 ? std::min(levels.front().size, nranks) : nranks; }
  // This machine with `ranks` host ranks on each node of `cores` cores: every rate of level 0
  // (links, bus, gamma, copy, shm) scaled by cores / ranks and its latencies by ranks / cores,
  // as ranks share the cores that run their copies and reductions. Itself when ranks <= cores.
  Machine oversubscribed(int ranks) const;
};

// Throws UsageError "machine 'PATH' line N: ..." for a missing, negative or unknown figure.
Machine read_machine(const std::string& path);
Machine parse_machine(const std::string& text, const std::string& what);
// The file format again (figures in us and GB/s), which parse_machine reads back.
std::string format_machine(const Machine& machine);

// "2us", "1.5ms", "3e-6" (seconds); "12.5GB/s", "100Gb/s", "900MB/s", "5e9" (bytes/s).
// Nothing on a bad or negative figure.
std::optional<double> parse_seconds(const std::string& text);
std::optional<double> parse_rate(const std::string& text);
std::string format_seconds(double seconds);
std::string format_rate(double bytes_per_s);

}  // namespace sb::sim
