#include "sim/allreduce_model.hpp"

#include <algorithm>
#include <cstdio>

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

AlgorithmParams algorithm_params(const Machine& machine, const AllreduceCase& c) {
  AlgorithmParams params;
  params.segment = std::max<size_t>(1, c.segment_bytes / size_of(c.type));
  params.node_size = c.node_size > 0 ? c.node_size : std::max(1, machine.levels.front().size);
  params.torus_x = c.torus_x;
  params.torus_y = c.torus_y;
  return params;
}

// NCCL's channels: one ring per local rank, at most 16.
int nccl_channels(const AlgorithmParams& params) { return std::min(params.node_size, 16); }

// rank's schedule of `schedule` ("rings": NCCL's, with `channels` of them).
Schedule build_schedule(const std::string& schedule, int rank, const AllreduceCase& c, const AlgorithmParams& params,
                        int channels) {
  if (schedule == "rings") return nccl_rings_allreduce(rank, c.nranks, c.count, params.node_size, channels);
  return find_algorithm(schedule)->build(rank, c.nranks, c.count, params);
}

// What is priced for `c`: the schedule itself, or those the library is known to pick between.
struct Priced {
  std::vector<std::string> schedules;
  Transport transport;
  size_t segment;
};

Priced priced_as(const Machine& machine, const AllreduceCase& c) {
  if (!is_known_allreduce(c.impl)) throw UsageError("unknown allreduce '" + c.impl + "'");
  const size_t bytes = c.count * size_of(c.type);
  if (c.impl == "mpi")
    return {{bytes < 10000 ? "rd" : power_of_two(c.nranks) ? "rabenseifner" : "ring"}, Transport::mpi, 0};
  if (c.impl == "nccl") {
    // NCCL picks, by its own cost model, between its rings and (across nodes) its double binary
    // tree: the faster of the two as priced here.
    const int node = c.node_size > 0 ? c.node_size : std::max(1, machine.levels.front().size);
    if (c.nranks > node) return {{"rings", "dbtree"}, Transport::nccl, c.segment_bytes};
    return {{"rings"}, Transport::nccl, c.segment_bytes};
  }
  return {{c.impl}, c.transport, c.segment_bytes};
}

// Every rank's finish of one schedule (or "rings", NCCL's channels) for the case, on `transport`.
SimResult price(const Machine& machine, const std::string& schedule, Transport transport, size_t segment,
                const AllreduceCase& c) {
  const AlgorithmParams params = algorithm_params(machine, c);
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
  std::vector<Schedule> schedules;
  schedules.reserve(static_cast<size_t>(c.nranks));
  for (int r = 0; r < c.nranks; ++r) schedules.push_back(build_schedule(schedule, r, c, params, nccl_channels(params)));
  return simulate_schedules(priced, schedules, config);
}

size_t steps_of(const Schedule& s) {
  size_t steps = 0;
  for (const Round& round : s.rounds) steps += round.steps.size();
  return steps;
}

}  // namespace

bool is_known_allreduce(const std::string& impl) {
  return impl == "mpi" || impl == "nccl" || find_algorithm(impl) != nullptr;
}

size_t steps_to_price(const Machine& machine, const AllreduceCase& c) {
  if (c.nranks <= 1) return 0;
  const AlgorithmParams params = algorithm_params(machine, c);
  size_t most = 0;
  for (const std::string& schedule : priced_as(machine, c).schedules) {
    // NCCL's rings are sampled as one channel: each of its channels is a ring on a slice.
    const int channels = schedule == "rings" ? nccl_channels(params) : 1;
    size_t per_rank = 0;
    for (const int rank : {0, c.nranks / 2, c.nranks - 1})
      per_rank = std::max(per_rank, steps_of(build_schedule(schedule, rank, c, params, 1)) * channels);
    most = std::max(most, per_rank * static_cast<size_t>(c.nranks));
  }
  return most;
}

void check_priceable(const Machine& machine, const AllreduceCase& c) {
  const size_t steps = steps_to_price(machine, c);
  if (steps <= kMostStepsPriced) return;
  char text[320];
  std::snprintf(text, sizeof text,
                "%s at %d ranks and %zu elements: its schedules have about %.0f million steps, more than the %zu "
                "million the simulator prices at once (fewer ranks, or another allreduce)",
                c.impl.c_str(), c.nranks, c.count, steps / 1e6, kMostStepsPriced >> 20);
  throw UsageError(text);
}

AllreducePrediction predict_allreduce(const Machine& machine, const AllreduceCase& c) {
  const Priced priced = priced_as(machine, c);
  const std::vector<std::string>& candidates = priced.schedules;
  const Transport transport = priced.transport;
  const size_t segment = priced.segment;
  AllreducePrediction prediction;
  prediction.finish_s.assign(1, 0.0);
  prediction.modelled_as = candidates.front() + "@" + std::string(name_of(transport));
  if (c.nranks <= 1) return prediction;
  check_priceable(machine, c);
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
