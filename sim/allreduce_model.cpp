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

// Every rank's finish of one schedule (or "rings", NCCL's channels) for the case, on `transport`.
SimResult price(const Machine& machine, const std::string& schedule, Transport transport, size_t segment,
                const AllreduceCase& c) {
  AlgorithmParams params;
  params.segment = std::max<size_t>(1, c.segment_bytes / size_of(c.type));
  params.node_size = c.node_size > 0 ? c.node_size : std::max(1, machine.levels.front().size);
  params.torus_x = c.torus_x;
  params.torus_y = c.torus_y;
  SimConfig config;
  config.transport = transport;
  config.type = c.type;
  config.segment_bytes = segment;
  // Host collectives whose buffers fit in the node's cache run at the cached rates, and ranks
  // beyond a node's cores share them.
  const size_t bytes = c.count * size_of(c.type);
  const int node_ranks = machine.ranks_per_node(c.nranks);
  const bool cached = machine.fits_in_cache(kWorkingSetFactor * static_cast<double>(bytes) * node_ranks);
  const Machine priced =
      transport == Transport::nccl ? machine : (cached ? machine.in_cache() : machine).oversubscribed(node_ranks);
  if (schedule != "rings") return simulate_algorithm(priced, *find_algorithm(schedule), params, c.nranks, c.count, config);
  std::vector<Schedule> schedules;
  const int channels = std::min(params.node_size, 16);  // one ring per local rank, at most 16
  for (int r = 0; r < c.nranks; ++r)
    schedules.push_back(nccl_rings_allreduce(r, c.nranks, c.count, params.node_size, channels));
  return simulate_schedules(priced, schedules, config);
}

}  // namespace

bool is_known_allreduce(const std::string& impl) {
  return impl == "mpi" || impl == "nccl" || find_algorithm(impl) != nullptr;
}

AllreducePrediction predict_allreduce(const Machine& machine, const AllreduceCase& c) {
  if (!is_known_allreduce(c.impl)) throw UsageError("unknown allreduce '" + c.impl + "'");
  const size_t bytes = c.count * size_of(c.type);
  // What is priced: the schedule itself, or what the library is known to run.
  std::vector<std::string> candidates = {c.impl};
  Transport transport = c.transport;
  size_t segment = c.segment_bytes;
  if (c.impl == "mpi") {
    candidates = {bytes < 10000 ? "rd" : power_of_two(c.nranks) ? "rabenseifner" : "ring"};
    transport = Transport::mpi;
    segment = 0;
  } else if (c.impl == "nccl") {
    // NCCL picks, by its own cost model, between its rings and (across nodes) its double binary
    // tree: the faster of the two as priced here.
    const int node = c.node_size > 0 ? c.node_size : std::max(1, machine.levels.front().size);
    candidates = {"rings"};
    if (c.nranks > node) candidates.push_back("dbtree");
    transport = Transport::nccl;
  }
  AllreducePrediction prediction;
  prediction.finish_s.assign(1, 0.0);
  prediction.modelled_as = candidates.front() + "@" + std::string(name_of(transport));
  if (c.nranks <= 1) return prediction;
  bool first = true;
  for (const std::string& schedule : candidates) {
    SimResult result = price(machine, schedule, transport, segment, c);
    if (!first && result.time_s >= prediction.time_s) continue;
    first = false;
    prediction.time_s = result.time_s;
    prediction.finish_s = std::move(result.finish_s);
    prediction.modelled_as = schedule + "@" + std::string(name_of(transport));
  }
  // The schedules pay their transport's fixed cost per call; the libraries' own is unknown.
  const auto call = machine.call_s.find(std::string(name_of(transport)));
  if (c.impl != "mpi" && c.impl != "nccl" && call != machine.call_s.end()) {
    // Host ranks beyond a node's cores share them, and so take longer over the call too.
    const double share = transport == Transport::nccl ? 1.0 : machine.core_share(machine.ranks_per_node(c.nranks));
    const double fixed = call->second / share;
    prediction.time_s += fixed;
    for (double& t : prediction.finish_s) t += fixed;
  }
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
