#include "sim/schedule_sim.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "sim/fair_share.hpp"

namespace sb::sim {
namespace {

// One receive of a round, as a message from its sender.
struct Message {
  int src = 0, dst = 0;
  double bytes = 0;
  bool reduce = false;       // recv_reduce (else recv_copy)
  bool after_sends = false;  // the receiver also sends this range this round
  bool shm_read = false;     // the shm transport's direct read inside level 0
  bool cpu_copy = false;     // the receiver's core moves the bytes (a level with `engine cpu`)
  double alpha = 0;
  double start = 0, rate = 0;
  FlowLinks links;
  double end = 0;            // when the last byte has landed (shm: has been read and reduced)
};

enum LinkKind : uint64_t { egress = 0, ingress = 1, bus = 2, reader = 3, shm_memory = 4 };

// The round's links, numbered as messages first use them.
class RoundLinks {
 public:
  int index(uint64_t level, LinkKind kind, uint64_t owner, double capacity) {
    const uint64_t key = (level << 56) | (static_cast<uint64_t>(kind) << 52) | owner;
    const auto [it, added] = index_.try_emplace(key, static_cast<int>(capacities_.size()));
    if (added) capacities_.push_back(capacity);
    return it->second;
  }
  const std::vector<double>& capacities() const { return capacities_; }
  void clear() {
    index_.clear();
    capacities_.clear();
  }

 private:
  std::unordered_map<uint64_t, int> index_;
  std::vector<double> capacities_;
};

// The links a message holds: the sender's way out and the receiver's way in at the level that
// joins them (a rank's own port, or its group's), and that level's bus when it has one.
void route(const Machine& machine, Message& m, Transport transport, size_t ranks, RoundLinks& links) {
  const size_t level = machine.level_between(m.src, m.dst);
  const bool shm = transport == Transport::shm && level == 0 && machine.has_shm();
  m.shm_read = shm;
  if (shm) {
    // The reader copies at its own rate, and all the readers of a node share its memory, which
    // carries `copy` per rank when every rank copies at once (the level's bus is MPI's).
    m.alpha = machine.shm_alpha_s;
    m.links.add(links.index(0, reader, static_cast<uint64_t>(m.dst), machine.shm_bandwidth));
    const size_t node_ranks = machine.levels.front().size > 0 ? static_cast<size_t>(machine.levels.front().size) : ranks;
    m.links.add(links.index(0, shm_memory, machine.group_of(m.dst, 0), machine.copy * static_cast<double>(node_ranks)));
    return;
  }
  const Level& l = machine.levels[level];
  m.alpha = l.alpha_s;
  m.cpu_copy = l.engine == Engine::cpu;
  const auto port_owner = [&](int rank) -> uint64_t {
    if (l.share == Share::rank || level == 0) return static_cast<uint64_t>(rank);
    return machine.group_of(rank, level - 1);
  };
  m.links.add(links.index(level, egress, port_owner(m.src), l.port_bandwidth()));
  m.links.add(links.index(level, ingress, port_owner(m.dst), l.port_bandwidth()));
  if (l.bus > 0) m.links.add(links.index(level, bus, machine.group_of(m.src, level), l.bus));
}

size_t pieces_of(double bytes, size_t segment_bytes) {
  if (segment_bytes == 0) return 1;
  return std::max<size_t>(1, static_cast<size_t>(std::ceil(bytes / static_cast<double>(segment_bytes))));
}

double bytes_of(const Chunk& chunk, size_t element) { return static_cast<double>(chunk.count * element); }

}  // namespace

SimResult simulate_schedules(const Machine& machine, const std::vector<Schedule>& schedules, const SimConfig& config) {
  const int nranks = static_cast<int>(schedules.size());
  const size_t element = size_of(config.type);
  const double gamma = machine.reduce_rate(config.type);
  SimResult result;
  std::vector<double> ready(nranks, 0.0);  // when each rank may start its next round
  size_t rounds = 0;
  for (const Schedule& s : schedules) rounds = std::max(rounds, s.rounds.size());

  RoundLinks links;
  std::vector<Message> messages;
  std::vector<double> sends_done(nranks);
  struct Piece {
    double arrival, bytes;
    bool after_sends;
  };
  std::vector<std::vector<Piece>> pieces(nranks);
  std::vector<std::vector<size_t>> cpu_messages(nranks);
  std::vector<double> receives_done(nranks), cpu_free(nranks), deferred_bytes(nranks);
  for (size_t i = 0; i < rounds; ++i) {
    messages.clear();
    links.clear();
    for (int r = 0; r < nranks; ++r) {
      if (i >= schedules[r].rounds.size()) continue;
      const Round& round = schedules[r].rounds[i];
      for (const Step& step : round.steps) {
        if (step.kind != StepKind::recv_reduce && step.kind != StepKind::recv_copy) continue;
        Message m;
        m.src = step.peer;
        m.dst = r;
        m.bytes = bytes_of(step.dst, element);
        m.reduce = step.kind == StepKind::recv_reduce;
        for (const Step& other : round.steps)
          m.after_sends = m.after_sends || (other.kind == StepKind::send && overlaps(other.src, step.dst));
        route(machine, m, config.transport, schedules.size(), links);
        messages.push_back(m);
      }
    }
    std::vector<FlowLinks> flows;
    flows.reserve(messages.size());
    for (const Message& m : messages) flows.push_back(m.links);
    const std::vector<double> rates = max_min_rates(flows, links.capacities());

    // Messages: each starts when both ends have reached the round.
    for (int r = 0; r < nranks; ++r) {
      sends_done[r] = receives_done[r] = cpu_free[r] = ready[r];
      deferred_bytes[r] = 0;
      pieces[r].clear();
      cpu_messages[r].clear();
    }
    for (size_t k = 0; k < messages.size(); ++k) {
      Message& m = messages[k];
      m.start = std::max(ready[m.src], ready[m.dst]) + m.alpha;
      m.rate = m.shm_read && m.reduce ? std::min(rates[k], gamma) : rates[k];
      result.bytes_moved += m.bytes;
      ++result.messages;
      if (m.cpu_copy && !m.shm_read) {
        cpu_messages[m.dst].push_back(k);
        continue;
      }
      m.end = m.start + m.bytes / m.rate;
      sends_done[m.src] = std::max(sends_done[m.src], m.end);
      if (!m.reduce || m.shm_read) {
        receives_done[m.dst] = std::max(receives_done[m.dst], m.end);
        continue;
      }
      // Pieces of the message land evenly over its transfer.
      const size_t n = pieces_of(m.bytes, config.segment_bytes);
      for (size_t p = 0; p < n; ++p)
        pieces[m.dst].push_back({m.start + (m.end - m.start) * static_cast<double>(p + 1) / static_cast<double>(n),
                                 m.bytes / static_cast<double>(n), m.after_sends});
    }
    // Messages the receiver's core copies: one after another in the order they start, each piece
    // copied and then reduced (a range the rank also sends waits for its sends, below).
    for (int r = 0; r < nranks; ++r) {
      std::sort(cpu_messages[r].begin(), cpu_messages[r].end(),
                [&](size_t a, size_t b) { return messages[a].start < messages[b].start; });
      for (size_t k : cpu_messages[r]) {
        Message& m = messages[k];
        const size_t n = pieces_of(m.bytes, config.segment_bytes);
        const double piece = m.bytes / static_cast<double>(n);
        for (size_t p = 0; p < n; ++p) {
          cpu_free[r] = std::max(cpu_free[r], m.start) + piece / m.rate;
          if (m.reduce && !m.after_sends) cpu_free[r] += piece / gamma;
        }
        if (m.reduce && m.after_sends) deferred_bytes[r] += m.bytes;
        m.end = cpu_free[r];
        sends_done[m.src] = std::max(sends_done[m.src], m.end);
        receives_done[r] = std::max(receives_done[r], m.end);
      }
    }
    // Each rank reduces its pieces one at a time in arrival order, then runs its local steps.
    for (int r = 0; r < nranks; ++r) {
      if (i >= schedules[r].rounds.size() || schedules[r].rounds[i].steps.empty()) continue;
      std::sort(pieces[r].begin(), pieces[r].end(), [](const Piece& a, const Piece& b) { return a.arrival < b.arrival; });
      double cpu = cpu_free[r];
      for (const Piece& p : pieces[r]) cpu = std::max({cpu, p.arrival, p.after_sends ? sends_done[r] : 0.0}) + p.bytes / gamma;
      if (deferred_bytes[r] > 0) cpu = std::max(cpu, sends_done[r]) + deferred_bytes[r] / gamma;
      double done = std::max({sends_done[r], receives_done[r], cpu});
      for (const Step& step : schedules[r].rounds[i].steps) {
        if (step.kind == StepKind::reduce_local) done += bytes_of(step.dst, element) / gamma;
        if (step.kind == StepKind::copy_local) done += bytes_of(step.dst, element) / machine.copy;
      }
      ready[r] = done;
    }
  }
  result.finish_s = ready;
  result.time_s = nranks > 0 ? *std::max_element(ready.begin(), ready.end()) : 0.0;
  return result;
}

SimResult simulate_algorithm(const Machine& machine, const AllreduceAlgorithm& algorithm, const AlgorithmParams& params,
                             int nranks, size_t count, const SimConfig& config) {
  std::vector<Schedule> schedules;
  schedules.reserve(nranks);
  for (int r = 0; r < nranks; ++r) schedules.push_back(algorithm.build(r, nranks, count, params));
  return simulate_schedules(machine, schedules, config);
}

}  // namespace sb::sim
