#include "sim/calibrate.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <fstream>
#include <vector>

#include "collectives/algorithms/algorithms.hpp"
#include "collectives/transports/mpi_transport.hpp"
#include "collectives/transports/shm_transport.hpp"
#include "common/check.hpp"
#include "common/memcpy_bandwidth.hpp"
#include "common/mpi_env.hpp"
#include "common/stats.hpp"
#include "kernels/reduce.hpp"

namespace sb::sim {
namespace {

std::string figure(const char* format, double a, double b = 0) {
  char text[160];
  std::snprintf(text, sizeof text, format, a, b);
  return text;
}

// Median over repeats of the one-way time (half a round trip) between ranks a and b; every rank
// of comm calls it, the others wait at the barriers.
PingPong ping_pong(int a, int b, uint64_t max_bytes, int repeats, MPI_Comm comm) {
  int rank = 0;
  SB_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  std::vector<unsigned char> buffer(max_bytes, 1);
  std::vector<uint64_t> sizes;
  std::vector<double> times;
  for (uint64_t bytes = 8; bytes <= max_bytes; bytes *= 4) {
    const int iterations = static_cast<int>(std::clamp<uint64_t>((64ull << 20) / bytes, 4, 200));
    std::vector<double> samples;
    for (int r = -1; r < repeats; ++r) {  // r = -1: warm-up
      SB_MPI_CHECK(MPI_Barrier(comm));
      const double start = MPI_Wtime();
      for (int i = 0; i < iterations; ++i) {
        if (rank == a) {
          SB_MPI_CHECK(MPI_Send(buffer.data(), static_cast<int>(bytes), MPI_BYTE, b, 0, comm));
          SB_MPI_CHECK(MPI_Recv(buffer.data(), static_cast<int>(bytes), MPI_BYTE, b, 0, comm, MPI_STATUS_IGNORE));
        } else if (rank == b) {
          SB_MPI_CHECK(MPI_Recv(buffer.data(), static_cast<int>(bytes), MPI_BYTE, a, 0, comm, MPI_STATUS_IGNORE));
          SB_MPI_CHECK(MPI_Send(buffer.data(), static_cast<int>(bytes), MPI_BYTE, a, 0, comm));
        }
      }
      if (r >= 0) samples.push_back((MPI_Wtime() - start) / (2.0 * iterations));
    }
    double t = percentile(samples, 50);
    SB_MPI_CHECK(MPI_Bcast(&t, 1, MPI_DOUBLE, a, comm));
    sizes.push_back(bytes);
    times.push_back(t);
  }
  return {sizes, times};
}

// alpha and bandwidth from the sizes whose working set (4 x size on each of 2 ranks) fits in the
// cache, the memory bandwidth from the others; both from all sizes when the cache is unknown.
struct TwoRegimeFit {
  double alpha_s = 0, cached = 0, memory = 0;
};
TwoRegimeFit fit_regimes(const PingPong& points, double cache_bytes) {
  std::vector<uint64_t> small_sizes, large_sizes;
  std::vector<double> small_times, large_times;
  for (size_t i = 0; i < points.sizes.size(); ++i) {
    const bool fits = cache_bytes > 0 && 8.0 * static_cast<double>(points.sizes[i]) <= cache_bytes;
    (fits ? small_sizes : large_sizes).push_back(points.sizes[i]);
    (fits ? small_times : large_times).push_back(points.one_way_s[i]);
  }
  TwoRegimeFit fit;
  if (small_sizes.size() < 2 || large_sizes.empty()) {
    const LinkFit all = fit_link(points.sizes, points.one_way_s);
    fit.alpha_s = all.alpha_s;
    fit.memory = all.bandwidth;
    return fit;
  }
  const LinkFit small = fit_link(small_sizes, small_times);
  fit.alpha_s = small.alpha_s;
  fit.cached = small.bandwidth;
  fit.memory = fit_bandwidth(large_sizes, large_times, small.alpha_s);
  return fit;
}

// The last-level cache of this node from sysfs (the highest cache index of cpu0), 0 if unknown.
double last_level_cache_bytes() {
  double bytes = 0;
  for (int index = 0; index < 8; ++index) {
    std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
    std::string text;
    if (!(in >> text)) continue;
    double value = std::atof(text.c_str());
    if (!text.empty() && (text.back() == 'K' || text.back() == 'k')) value *= 1024;
    if (!text.empty() && (text.back() == 'M' || text.back() == 'm')) value *= 1024 * 1024;
    bytes = std::max(bytes, value);
  }
  return bytes;
}

// Every rank of `comm` exchanges `bytes` with its partner (rank ^ 1; an odd last rank idles) at
// once: the total bytes/s of all the flows, median over repeats.
double all_pairs_exchange(uint64_t bytes, int repeats, MPI_Comm comm, int& flows) {
  int rank = 0, nranks = 1;
  SB_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  SB_MPI_CHECK(MPI_Comm_size(comm, &nranks));
  const int partner = rank ^ 1;
  const bool active = partner < nranks;
  flows = nranks - nranks % 2;
  std::vector<unsigned char> out(bytes, 1), in(bytes, 2);
  std::vector<double> samples;
  for (int r = -1; r < repeats; ++r) {
    SB_MPI_CHECK(MPI_Barrier(comm));
    const double start = MPI_Wtime();
    if (active)
      SB_MPI_CHECK(MPI_Sendrecv(out.data(), static_cast<int>(bytes), MPI_BYTE, partner, 1, in.data(),
                                static_cast<int>(bytes), MPI_BYTE, partner, 1, comm, MPI_STATUS_IGNORE));
    double mine = MPI_Wtime() - start, slowest = 0;
    SB_MPI_CHECK(MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm));
    if (r >= 0) samples.push_back(slowest);
  }
  return flows * static_cast<double>(bytes) / percentile(samples, 50);
}

// Bytes of one operand reduced per second per rank with every rank reducing at once (mean).
double reduction_rate(DataType type, uint64_t bytes, int repeats, MPI_Comm comm) {
  const size_t count = bytes / size_of(type);
  std::vector<unsigned char> a(count * size_of(type), 0), b(count * size_of(type), 0);
  std::vector<double> samples;
  for (int r = -1; r < repeats; ++r) {
    SB_MPI_CHECK(MPI_Barrier(comm));
    const double start = MPI_Wtime();
    reduce_into_cpu(a.data(), b.data(), count, type, RedOp::sum);
    if (r >= 0) samples.push_back(MPI_Wtime() - start);
  }
  const double mine = static_cast<double>(count * size_of(type)) / percentile(samples, 50);
  double sum = 0;
  int nranks = 1;
  SB_MPI_CHECK(MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, comm));
  SB_MPI_CHECK(MPI_Comm_size(comm, &nranks));
  return sum / nranks;
}

// Rank 0 copying a buffer that rank 1 of the node has just written, out of a shared window: the
// shm transport's one-copy read between cores (from the peer's cache when the buffer fits).
double shm_read_rate(MPI_Comm node, uint64_t bytes, int repeats) {
  int rank = 0, nranks = 1;
  SB_MPI_CHECK(MPI_Comm_rank(node, &rank));
  SB_MPI_CHECK(MPI_Comm_size(node, &nranks));
  if (nranks < 2) return 0;
  MPI_Win win = MPI_WIN_NULL;
  unsigned char* mine = nullptr;
  SB_MPI_CHECK(MPI_Win_allocate_shared(rank == 1 ? static_cast<MPI_Aint>(bytes) : 0, 1, MPI_INFO_NULL, node, &mine, &win));
  MPI_Aint size = 0;
  int unit = 1;
  unsigned char* peer = nullptr;
  SB_MPI_CHECK(MPI_Win_shared_query(win, 1, &size, &unit, &peer));
  std::vector<unsigned char> into(rank == 0 ? bytes : 0, 0);
  std::vector<double> samples;
  for (int r = -2; r < repeats * 4; ++r) {
    if (rank == 1) std::memset(mine, r & 0xff, bytes);
    SB_MPI_CHECK(MPI_Win_sync(win));
    SB_MPI_CHECK(MPI_Barrier(node));
    SB_MPI_CHECK(MPI_Win_sync(win));
    if (rank == 0) {
      const double start = MPI_Wtime();
      std::memcpy(into.data(), peer, bytes);
      if (r >= 0) samples.push_back(MPI_Wtime() - start);
    }
    SB_MPI_CHECK(MPI_Barrier(node));
  }
  SB_MPI_CHECK(MPI_Win_free(&win));
  return rank == 0 ? static_cast<double>(bytes) / percentile(samples, 50) : 0.0;
}

struct TransportLatency {
  double per_round_s = 0, per_call_s = 0;
};

// A transport's fixed costs, from two tiny allreduces (one element per rank) on the ranks of one
// node: the ring's 2(p-1) rounds and recursive doubling's fewer. Their difference gives the cost of
// a round, the rest is the cost of a call (setup, fills, the harness's timing).
template <class Execute>
TransportLatency transport_latency(MPI_Comm node, int repeats, Execute&& execute) {
  int rank = 0, nranks = 1;
  SB_MPI_CHECK(MPI_Comm_rank(node, &rank));
  SB_MPI_CHECK(MPI_Comm_size(node, &nranks));
  if (nranks < 2) return {};
  const size_t count = static_cast<size_t>(nranks);
  const Schedule ring = ring_allreduce(rank, nranks, count, AlgorithmParams{});
  const Schedule rd = recursive_doubling_allreduce(rank, nranks, count, AlgorithmParams{});
  auto time = [&](const Schedule& schedule) {
    std::vector<double> samples;
    for (int r = -10; r < repeats * 20; ++r) {
      SB_MPI_CHECK(MPI_Barrier(node));
      const double start = MPI_Wtime();
      execute(schedule);
      double mine = MPI_Wtime() - start, mean = 0;
      SB_MPI_CHECK(MPI_Allreduce(&mine, &mean, 1, MPI_DOUBLE, MPI_SUM, node));
      if (r >= 0) samples.push_back(mean / nranks);
    }
    return percentile(samples, 50);
  };
  const double t_ring = time(ring), t_rd = time(rd);
  const double rounds_ring = static_cast<double>(ring.rounds.size()), rounds_rd = static_cast<double>(rd.rounds.size());
  TransportLatency latency;
  latency.per_round_s = std::max(0.0, (t_ring - t_rd) / std::max(1.0, rounds_ring - rounds_rd));
  latency.per_call_s = std::max(0.0, t_ring - rounds_ring * latency.per_round_s);
  return latency;
}

TransportLatency shm_latency(MPI_Comm node, int repeats) {
  int nranks = 1;
  SB_MPI_CHECK(MPI_Comm_size(node, &nranks));
  if (nranks < 2) return {};
  ShmTransport shm(node, 0);
  const size_t count = static_cast<size_t>(nranks);
  float* input = static_cast<float*>(shm.allocate(count * sizeof(float)));
  float* work = static_cast<float*>(shm.allocate(count * sizeof(float)));
  std::fill(input, input + count, 1.0f);
  const TransportLatency latency = transport_latency(
      node, repeats, [&](const Schedule& s) { shm.execute(s, input, work, DataType::float32, RedOp::sum); });
  shm.release(work);
  shm.release(input);
  return latency;
}

TransportLatency mpi_latency(MPI_Comm node, int repeats) {
  int nranks = 1;
  SB_MPI_CHECK(MPI_Comm_size(node, &nranks));
  MpiTransport mpi(node, 65536);
  std::vector<float> input(static_cast<size_t>(nranks), 1.0f), work(input.size());
  return transport_latency(node, repeats,
                           [&](const Schedule& s) { mpi.execute(s, input.data(), work.data(), DataType::float32, RedOp::sum); });
}

// Where noise leaves no positive slope (a loaded machine: the larger messages timed no slower), the
// bandwidth of the largest message alone, its alpha included: a lower bound, where 0 made a
// machine file that sb-dryrun refuses to read.
double largest_message_bandwidth(const std::vector<uint64_t>& sizes, const std::vector<double>& seconds) {
  const size_t largest = static_cast<size_t>(std::max_element(sizes.begin(), sizes.end()) - sizes.begin());
  return seconds[largest] > 0 ? static_cast<double>(sizes[largest]) / seconds[largest] : 0;
}

}  // namespace

LinkFit fit_link(const std::vector<uint64_t>& sizes, const std::vector<double>& seconds) {
  // Weighted least squares with weights 1/t^2: minimises sum ((alpha + n beta - t) / t)^2.
  double sw = 0, swn = 0, swnn = 0, swt = 0, swnt = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const double n = static_cast<double>(sizes[i]), t = seconds[i], w = 1 / (t * t);
    sw += w;
    swn += w * n;
    swnn += w * n * n;
    swt += w * t;
    swnt += w * n * t;
  }
  LinkFit fit;
  if (sizes.empty()) return fit;
  const double det = sw * swnn - swn * swn;
  double alpha = det != 0 ? (swt * swnn - swn * swnt) / det : 0;
  double beta = det != 0 ? (sw * swnt - swn * swt) / det : 0;
  if (alpha < 0) {  // refit the slope through the origin
    alpha = 0;
    beta = swnn > 0 ? swnt / swnn : 0;
  }
  fit.alpha_s = alpha;
  fit.bandwidth = beta > 0 ? 1 / beta : largest_message_bandwidth(sizes, seconds);
  return fit;
}

double fit_bandwidth(const std::vector<uint64_t>& sizes, const std::vector<double>& seconds, double alpha_s) {
  double swnn = 0, swnt = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const double n = static_cast<double>(sizes[i]), t = seconds[i], w = 1 / (t * t);
    swnn += w * n * n;
    swnt += w * n * (t - alpha_s);
  }
  if (sizes.empty()) return 0;
  return swnt > 0 ? swnn / swnt : largest_message_bandwidth(sizes, seconds);
}

Machine calibrate(const CalibrationSettings& s, MPI_Comm comm, std::vector<std::string>& log,
                  const std::function<void(const std::string& figure)>& measured) {
  const auto note = [&](std::string line) {
    log.push_back(std::move(line));
    if (measured) measured(log.back());
  };
  const WorldLayout layout = discover_world_layout();
  Machine m;
  m.name = s.name;
  MPI_Comm node = MPI_COMM_NULL;
  SB_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  int node_size = 1;
  SB_MPI_CHECK(MPI_Comm_size(node, &node_size));
  double cache = layout.rank == 0 ? last_level_cache_bytes() : 0;
  SB_MPI_CHECK(MPI_Bcast(&cache, 1, MPI_DOUBLE, 0, comm));
  m.cache_bytes = cache;
  // Buffers that fit in the cache with every rank of a node holding four (allreduce_model.hpp's
  // working set), and buffers that do not.
  const uint64_t large = s.max_bytes;
  const uint64_t small = cache > 0 ? std::clamp<uint64_t>(static_cast<uint64_t>(cache / (16.0 * node_size)), 4096, 4 << 20) : 0;
  if (cache > 0) note(figure("last-level cache %.3g MiB; cached figures on %.3g KiB buffers", cache / 1048576, small / 1024.0));

  // Level 0: ranks 0 and 1, which share a node (calibrate_machine checks).
  const TwoRegimeFit local = fit_regimes(ping_pong(0, 1, s.max_bytes, s.repeats, comm), cache);
  Level node_level{"node", layout.nodes > 1 ? layout.max_ranks_per_node : 0, local.alpha_s, local.memory, 1, Share::rank, 0};
  node_level.cached_bandwidth = local.cached;
  node_level.engine = Engine::cpu;  // MPI between processes of a node: the receiver's core copies
  long cores = layout.rank == 0 ? ::sysconf(_SC_NPROCESSORS_ONLN) : 0;
  SB_MPI_CHECK(MPI_Bcast(&cores, 1, MPI_LONG, 0, comm));
  m.cores = static_cast<int>(std::max(cores, 1L));
  note(figure("ping-pong inside a node: alpha %.3g us, bandwidth %.3g GB/s", local.alpha_s * 1e6, local.memory / 1e9) +
                figure(" (%.3g GB/s cached)", local.cached / 1e9));
  // The bus: every rank of node 0 exchanging with a partner at once, kept when the total falls
  // short of what independent ports would carry.
  const auto bus = [&](uint64_t bytes, double port, const char* what) {
    int flows = 0;
    double total = all_pairs_exchange(bytes, s.repeats, node, flows);
    SB_MPI_CHECK(MPI_Bcast(&total, 1, MPI_DOUBLE, 0, comm));
    SB_MPI_CHECK(MPI_Bcast(&flows, 1, MPI_INT, 0, comm));
    note("every rank of node 0 exchanging at once, " + std::string(what) +
                  figure(" buffers: %.3g GB/s in all over %.0f flows", total / 1e9, flows));
    return total < 0.9 * flows * port ? total : 0.0;
  };
  node_level.bus = bus(large, local.memory, "memory");
  if (small > 0) node_level.cached_bus = bus(small, local.cached, "cached");
  m.levels.push_back(node_level);

  if (layout.nodes > 1) {
    int other = 1;  // the first rank that is not on rank 0's host
    while (other < layout.nranks && layout.hosts[other] == layout.hosts[0]) ++other;
    const PingPong remote = ping_pong(0, other, s.max_bytes, s.repeats, comm);
    const LinkFit fit = fit_link(remote.sizes, remote.one_way_s);
    m.levels.push_back({"net", 0, fit.alpha_s, fit.bandwidth, 1, Share::rank, 0});
    note(figure("ping-pong between nodes: alpha %.3g us, bandwidth %.3g GB/s", fit.alpha_s * 1e6, fit.bandwidth / 1e9));
  }

  for (DataType type : kAllDataTypes) {
    m.gamma[type] = reduction_rate(type, large, s.repeats, comm);
    if (small > 0) m.cached_gamma[type] = reduction_rate(type, small, s.repeats * 4, comm);
    note(figure(("reduction, " + std::string(name_of(type)) + ", every rank at once: %.3g GB/s per rank").c_str(),
                         m.gamma[type] / 1e9) +
                  figure(" (%.3g GB/s cached)", small > 0 ? m.cached_gamma[type] / 1e9 : 0));
  }
  m.copy = measure_memcpy_bandwidth(large, s.repeats, comm).GBps * 1e9;
  if (small > 0) m.cached_copy = measure_memcpy_bandwidth(small, s.repeats * 4, comm).GBps * 1e9;
  note(figure("memcpy, every rank at once: %.3g GB/s per rank (%.3g GB/s cached)", m.copy / 1e9, m.cached_copy / 1e9));

  // The shm transport: a core reading what another core of the node has just written, and the
  // fixed costs of its rounds and calls; the mpi transport's cost of a call (its rounds cost the
  // level's alpha).
  double read[2] = {shm_read_rate(node, large, s.repeats), small > 0 ? shm_read_rate(node, small, s.repeats) : 0.0};
  SB_MPI_CHECK(MPI_Bcast(read, 2, MPI_DOUBLE, 0, comm));
  TransportLatency shm = shm_latency(node, s.repeats);
  SB_MPI_CHECK(MPI_Bcast(&shm, 2, MPI_DOUBLE, 0, comm));
  m.shm_alpha_s = shm.per_round_s;
  m.shm_bandwidth = read[0];
  m.cached_shm_bandwidth = read[1];
  m.call_s["shm"] = shm.per_call_s;
  note(figure("shm transport: %.3g us per round, %.3g us per call", shm.per_round_s * 1e6, shm.per_call_s * 1e6) +
                figure("; reading a peer's buffer %.3g GB/s (%.3g GB/s cached)", read[0] / 1e9, read[1] / 1e9));
  TransportLatency mpi = mpi_latency(node, s.repeats);
  SB_MPI_CHECK(MPI_Bcast(&mpi, 2, MPI_DOUBLE, 0, comm));
  m.call_s["mpi"] = std::max(0.0, mpi.per_call_s + static_cast<double>(2 * (node_size - 1)) * (mpi.per_round_s - local.alpha_s));
  note(figure("mpi transport: %.3g us per call beyond the link's alpha", m.call_s["mpi"] * 1e6));
  SB_MPI_CHECK(MPI_Comm_free(&node));
  return m;
}

}  // namespace sb::sim
