#pragma once
// Measures the figures of a machine description on the machine the job runs on (collective over
// MPI_COMM_WORLD, 2+ ranks):
//   cores: the node's online processors (ranks beyond them share cores);
//   level 0 (the ranks of one node, `engine cpu`: MPI's copies between processes are made by the
//     receiving core): alpha and bandwidth fitted to a ping-pong between two ranks
//     of node 0 over a size sweep (least squares on the relative error, so that small sizes fix
//     alpha and large ones the bandwidth); the bus from every rank exchanging at once, kept when
//     the total falls short of what independent ports would carry;
//   level 1 (nodes), when the job spans nodes: the same fit between rank 0 and a rank of node 1;
//   gamma per datatype: the host reduction kernel's rate with every rank reducing at once;
//   copy: memcpy with every rank copying at once;
//   shm: alpha from a tiny ring on the shm transport, per round; bandwidth from one rank's memcpy;
//   cache: the last-level cache's size (sysfs); every rate above is measured twice, on buffers
//     that fit in it and on buffers that do not (the ping-pong: alpha and the cached bandwidth from
//     the sizes that fit, the memory bandwidth from the rest).
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/machine.hpp"

namespace sb::sim {

// The one-way times of a size sweep between two ranks.
struct PingPong {
  std::vector<uint64_t> sizes;
  std::vector<double> one_way_s;  // median half round trip per size
};

struct LinkFit {
  double alpha_s = 0, bandwidth = 0;
};

// Fits t = alpha + bytes / bandwidth to the points, minimising the squared relative error.
// alpha is clamped at 0; where the points give no positive slope (noise), the bandwidth is the
// largest message's size over its time. Pure.
LinkFit fit_link(const std::vector<uint64_t>& sizes, const std::vector<double>& seconds);
// The bandwidth of t = alpha + bytes / bandwidth with alpha given, by the same criterion; pure.
double fit_bandwidth(const std::vector<uint64_t>& sizes, const std::vector<double>& seconds, double alpha_s);

struct CalibrationSettings {
  std::string name;
  uint64_t max_bytes = 64 << 20;
  int repeats = 5;
};

// Collective; the machine is complete on rank 0 (other ranks get a partial copy). Each figure
// measured is added to `log` and passed to `measured` (progress for a watchdog) as it comes.
Machine calibrate(const CalibrationSettings& settings, MPI_Comm comm, std::vector<std::string>& log,
                  const std::function<void(const std::string& figure)>& measured = {});

}  // namespace sb::sim
