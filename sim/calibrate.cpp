#include "sim/calibrate.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "collectives/algorithms/algorithms.hpp"
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
LinkFit ping_pong(int a, int b, uint64_t max_bytes, int repeats, MPI_Comm comm) {
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
  return fit_link(sizes, times);
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

// The shm transport's per-round latency: a ring allreduce of one element per rank on the ranks
// of one node, over its 2(p-1) rounds.
double shm_round_latency(MPI_Comm node, int repeats) {
  int rank = 0, nranks = 1;
  SB_MPI_CHECK(MPI_Comm_rank(node, &rank));
  SB_MPI_CHECK(MPI_Comm_size(node, &nranks));
  if (nranks < 2) return 0;
  ShmTransport shm(node, 0);
  const size_t count = static_cast<size_t>(nranks);
  float* input = static_cast<float*>(shm.allocate(count * sizeof(float)));
  float* work = static_cast<float*>(shm.allocate(count * sizeof(float)));
  std::fill(input, input + count, 1.0f);
  const Schedule schedule = ring_allreduce(rank, nranks, count, AlgorithmParams{});
  std::vector<double> samples;
  for (int r = -10; r < repeats * 20; ++r) {
    SB_MPI_CHECK(MPI_Barrier(node));
    const double start = MPI_Wtime();
    shm.execute(schedule, input, work, DataType::float32, RedOp::sum);
    if (r >= 0) samples.push_back(MPI_Wtime() - start);
  }
  shm.release(work);
  shm.release(input);
  return percentile(samples, 50) / (2.0 * (nranks - 1));
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
  fit.sizes = sizes;
  fit.one_way_s = seconds;
  const double det = sw * swnn - swn * swn;
  double alpha = det != 0 ? (swt * swnn - swn * swnt) / det : 0;
  double beta = det != 0 ? (sw * swnt - swn * swt) / det : 0;
  if (alpha < 0) {  // refit the slope through the origin
    alpha = 0;
    beta = swnn > 0 ? swnt / swnn : 0;
  }
  fit.alpha_s = alpha;
  fit.bandwidth = beta > 0 ? 1 / beta : 0;
  return fit;
}

Machine calibrate(const CalibrationSettings& s, MPI_Comm comm, std::vector<std::string>& log) {
  const WorldLayout layout = discover_world_layout();
  Machine m;
  m.name = s.name;
  MPI_Comm node = MPI_COMM_NULL;
  SB_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  int node_rank = 0, node_size = 1;
  SB_MPI_CHECK(MPI_Comm_rank(node, &node_rank));
  SB_MPI_CHECK(MPI_Comm_size(node, &node_size));

  // Level 0: two ranks of node 0 (ranks 0 and 1 when node 0 has two; the run is refused otherwise).
  const LinkFit local = ping_pong(0, 1, s.max_bytes, s.repeats, comm);
  Level node_level{"node", layout.nodes > 1 ? layout.max_ranks_per_node : 0, local.alpha_s, local.bandwidth, 1, Share::rank, 0};
  log.push_back(figure("ping-pong inside a node: alpha %.3g us, bandwidth %.3g GB/s", local.alpha_s * 1e6, local.bandwidth / 1e9));
  int flows = 0;
  const double aggregate = all_pairs_exchange(s.max_bytes, s.repeats, node, flows);
  double node0_aggregate = aggregate;
  SB_MPI_CHECK(MPI_Bcast(&node0_aggregate, 1, MPI_DOUBLE, 0, comm));
  int node0_flows = flows;
  SB_MPI_CHECK(MPI_Bcast(&node0_flows, 1, MPI_INT, 0, comm));
  log.push_back(figure("every rank of node 0 exchanging at once: %.3g GB/s in all, over %.0f flows", node0_aggregate / 1e9, node0_flows));
  if (node0_aggregate < 0.9 * node0_flows * local.bandwidth) node_level.bus = node0_aggregate;
  m.levels.push_back(node_level);

  if (layout.nodes > 1) {
    // The first rank that is not on rank 0's host.
    int other = 1;
    while (other < layout.nranks && layout.hosts[other] == layout.hosts[0]) ++other;
    const LinkFit remote = ping_pong(0, other, s.max_bytes, s.repeats, comm);
    m.levels.push_back({"net", 0, remote.alpha_s, remote.bandwidth, 1, Share::rank, 0});
    log.push_back(figure("ping-pong between nodes: alpha %.3g us, bandwidth %.3g GB/s", remote.alpha_s * 1e6, remote.bandwidth / 1e9));
  }

  for (DataType type : kAllDataTypes) {
    m.gamma[type] = reduction_rate(type, s.max_bytes, s.repeats, comm);
    log.push_back(figure((std::string("reduction, ") + std::string(name_of(type)) + ", every rank at once: %.3g GB/s per rank").c_str(),
                         m.gamma[type] / 1e9));
  }
  m.copy = measure_memcpy_bandwidth(s.max_bytes, s.repeats, comm).GBps * 1e9;
  log.push_back(figure("memcpy, every rank at once: %.3g GB/s per rank", m.copy / 1e9));

  double alone = 0;
  {
    MPI_Comm self = MPI_COMM_SELF;
    const int rank0 = layout.rank == 0;
    if (rank0) alone = measure_memcpy_bandwidth(s.max_bytes, s.repeats, self).GBps * 1e9;
    SB_MPI_CHECK(MPI_Bcast(&alone, 1, MPI_DOUBLE, 0, comm));
  }
  double shm_alpha = shm_round_latency(node, s.repeats);
  SB_MPI_CHECK(MPI_Bcast(&shm_alpha, 1, MPI_DOUBLE, 0, comm));
  if (node_size > 1 || layout.rank != 0) {
    m.shm_alpha_s = shm_alpha;
    m.shm_bandwidth = alone;
    log.push_back(figure("shm transport: %.3g us per round; one rank's memcpy %.3g GB/s", shm_alpha * 1e6, alone / 1e9));
  }
  SB_MPI_CHECK(MPI_Comm_free(&node));
  return m;
}

}  // namespace sb::sim
