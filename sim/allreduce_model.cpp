#include "sim/allreduce_model.hpp"

#include "common/usage_error.hpp"
#include "sim/nccl_rings.hpp"

namespace sb::sim {
namespace {

const AllreduceAlgorithm* find_algorithm(const std::string& name) {
  for (const AllreduceAlgorithm& a : allreduce_algorithms())
    if (a.name == name) return &a;
  return nullptr;
}

bool power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

// A rank's working set, in buffers of the allreduce's size: its input and result, and the
// staging and library buffers that the peers' data passes through.
constexpr double kWorkingSetFactor = 4;

}  // namespace

bool is_known_allreduce(const std::string& impl) {
  return impl == "mpi" || impl == "nccl" || find_algorithm(impl) != nullptr;
}

AllreducePrediction predict_allreduce(const Machine& machine, const AllreduceCase& c) {
  std::string schedule = c.impl;
  Transport transport = c.transport;
  size_t segment = c.segment_bytes;
  const size_t bytes = c.count * size_of(c.type);
  if (c.impl == "mpi") {
    schedule = bytes < 10000 ? "rd" : power_of_two(c.nranks) ? "rabenseifner" : "ring";
    transport = Transport::mpi;
    segment = 0;
  } else if (c.impl == "nccl") {
    schedule = "rings";
    transport = Transport::nccl;
  }
  const AllreduceAlgorithm* algorithm = schedule == "rings" ? nullptr : find_algorithm(schedule);
  if (!algorithm && schedule != "rings") throw UsageError("unknown allreduce '" + c.impl + "'");
  AlgorithmParams params;
  params.segment = std::max<size_t>(1, c.segment_bytes / size_of(c.type));
  params.node_size = c.node_size > 0 ? c.node_size : std::max(1, machine.levels.front().size);
  params.torus_x = c.torus_x;
  params.torus_y = c.torus_y;
  SimConfig config;
  config.transport = transport;
  config.type = c.type;
  config.segment_bytes = segment;
  AllreducePrediction prediction;
  // Host collectives whose buffers fit in the node's cache run at the cached rates.
  const size_t node_ranks = machine.levels.front().size > 0 ? std::min(machine.levels.front().size, c.nranks) : c.nranks;
  const bool cached = machine.fits_in_cache(kWorkingSetFactor * static_cast<double>(bytes) * static_cast<double>(node_ranks));
  const Machine priced = transport == Transport::nccl ? machine : (cached ? machine.in_cache() : machine).oversubscribed(static_cast<int>(node_ranks));
  if (c.nranks > 1) {
    SimResult result;
    if (algorithm) {
      result = simulate_algorithm(priced, *algorithm, params, c.nranks, c.count, config);
    } else {  // NCCL: one ring per local rank of a node (its channels), at most 16
      std::vector<Schedule> schedules;
      const int channels = std::min(params.node_size, 16);
      for (int r = 0; r < c.nranks; ++r)
        schedules.push_back(nccl_rings_allreduce(r, c.nranks, c.count, params.node_size, channels));
      result = simulate_schedules(priced, schedules, config);
    }
    // The schedules pay their transport's fixed cost per call; the libraries' own is unknown.
    const auto call = priced.call_s.find(std::string(name_of(transport)));
    const double fixed = c.impl != "mpi" && c.impl != "nccl" && call != priced.call_s.end() ? call->second : 0.0;
    prediction.time_s = result.time_s + fixed;
    for (double& t : result.finish_s) t += fixed;
    prediction.finish_s = std::move(result.finish_s);
  } else {
    prediction.finish_s.assign(1, 0.0);
  }
  prediction.modelled_as = schedule + "@" + std::string(name_of(transport));
  return prediction;
}

double AllreduceTimes::seconds(size_t count) {
  const auto it = cache_.find(count);
  if (it != cache_.end()) return it->second;
  AllreduceCase c = base_;
  c.count = count;
  const double t = predict_allreduce(machine_, c).time_s;
  cache_[count] = t;
  return t;
}

}  // namespace sb::sim
