#include "collectives/verify.hpp"

#include <array>
#include <cstdint>
#include <map>

namespace sb {
namespace {

// A set of ranks, one bit each, in Words 64-bit words: the verifier is instantiated with as few
// words as the rank count needs, since the sets are copied at every step it follows.
template <size_t Words>
struct RankSet {
  std::array<uint64_t, Words> bits{};

  static RankSet only(int rank) {
    RankSet set;
    set.bits[static_cast<size_t>(rank) / 64] = uint64_t{1} << (rank % 64);
    return set;
  }
  bool contains(int rank) const { return (bits[static_cast<size_t>(rank) / 64] >> (rank % 64)) & 1; }
  bool intersects(const RankSet& other) const {
    for (size_t i = 0; i < Words; ++i)
      if (bits[i] & other.bits[i]) return true;
    return false;
  }
  RankSet& operator|=(const RankSet& other) {
    for (size_t i = 0; i < Words; ++i) bits[i] |= other.bits[i];
    return *this;
  }
  bool operator==(const RankSet&) const = default;
};

// What an element holds: the set of ranks whose input has been reduced into it.
template <size_t Words>
struct Cell {
  RankSet<Words> ranks;
  bool defined = false;  // written at least once (scratch starts undefined)
  bool doubled = false;  // some rank's contribution was added twice
  bool operator==(const Cell&) const = default;
};

template <size_t Words>
struct Piece {
  size_t length;
  Cell<Words> cell;
};
template <size_t Words>
using Content = std::vector<Piece<Words>>;

// A buffer's cells as a piecewise-constant map: key = first element of a run of equal cells.
template <size_t Words>
class Cells {
  using Cell = sb::Cell<Words>;
  using Piece = sb::Piece<Words>;
  using Content = sb::Content<Words>;

 public:
  Cells(size_t size, Cell initial) : size_(size) { runs_[0] = initial; }
  size_t size() const { return size_; }

  Content read(size_t offset, size_t count) {
    Content content;
    split(offset);
    split(offset + count);
    for (auto it = runs_.find(offset); it != runs_.end() && it->first < offset + count; ++it)
      content.push_back({next_key(it) - it->first, it->second});
    return content;
  }

  void write(size_t offset, const Content& content) {
    size_t at = offset;
    for (const Piece& piece : content) {
      split(at);
      split(at + piece.length);
      runs_.erase(runs_.find(at), runs_.find(at + piece.length));
      runs_[at] = piece.cell;
      at += piece.length;
    }
  }

  void reduce(size_t offset, const Content& content) {
    size_t at = offset;
    for (const Piece& piece : content) {
      split(at);
      split(at + piece.length);
      for (auto it = runs_.find(at); it != runs_.end() && it->first < at + piece.length; ++it) {
        Cell& cell = it->second;
        cell.doubled = cell.doubled || piece.cell.doubled || cell.ranks.intersects(piece.cell.ranks);
        cell.defined = cell.defined && piece.cell.defined;
        cell.ranks |= piece.cell.ranks;
      }
      at += piece.length;
    }
  }

 private:
  size_t next_key(typename std::map<size_t, Cell>::iterator it) {
    auto next = std::next(it);
    return next == runs_.end() ? size_ : next->first;
  }
  void split(size_t at) {
    if (at >= size_ || runs_.count(at)) return;
    auto it = std::prev(runs_.upper_bound(at));
    runs_[at] = it->second;
  }

  size_t size_;
  std::map<size_t, Cell> runs_;
};

template <size_t Words>
struct RankState {
  Cells<Words> work, scratch;
  Cells<Words>& of(BufferId id) { return id == BufferId::work ? work : scratch; }
};

template <size_t Words>
bool any_undefined(const Content<Words>& content) {
  for (const Piece<Words>& piece : content)
    if (!piece.cell.defined) return true;
  return false;
}

template <size_t Words>
struct Message {
  Content<Words> content;
  size_t count;
};

// What a run of elements that ends the schedule on a rank lacks, or empty: a contribution twice,
// or some rank's not at all (the first such rank named, and how many there are).
template <size_t Words>
std::string wrong_sum(const Cell<Words>& cell, int p) {
  if (cell.doubled) return "holds some rank's contribution twice";
  int missing = 0, first = -1;
  for (int r = 0; r < p; ++r)
    if (!cell.ranks.contains(r)) {
      if (first < 0) first = r;
      ++missing;
    }
  if (missing == 0) return {};
  return "is missing the contributions of " + std::to_string(missing) + " rank" + (missing > 1 ? "s" : "") +
         " (rank " + std::to_string(first) + " first)";
}

template <size_t Words>
std::string verify(const std::vector<Schedule>& schedules) {
  using Content = sb::Content<Words>;
  using Message = sb::Message<Words>;
  // The messages of one round between each (sender, receiver) pair, in the order sent.
  using Mailbox = std::map<std::pair<int, int>, std::vector<Message>>;
  const int p = static_cast<int>(schedules.size());
  const size_t count = schedules[0].count;
  std::vector<RankState<Words>> state;
  size_t rounds = 0;
  for (int r = 0; r < p; ++r) {
    const Schedule& s = schedules[static_cast<size_t>(r)];
    if (s.rank != r || s.nranks != p || s.count != count)
      return "rank " + std::to_string(r) + ": schedule is for another rank, size or count";
    state.push_back({Cells<Words>(count, {RankSet<Words>::only(r), true, false}),
                     Cells<Words>(s.scratch_count, {{}, false, false})});
    rounds = std::max(rounds, s.rounds.size());
  }
  // A rank's steps in a round; none in the rounds past the end of its schedule.
  const std::vector<Step> no_steps;
  auto steps_of = [&](int rank, size_t round) -> const std::vector<Step>& {
    const Schedule& s = schedules[static_cast<size_t>(rank)];
    return round < s.rounds.size() ? s.rounds[round].steps : no_steps;
  };
  auto where = [](int rank, size_t round, size_t step) {
    return "rank " + std::to_string(rank) + " round " + std::to_string(round) + " step " +
           std::to_string(step) + ": ";
  };

  for (size_t round = 0; round < rounds; ++round) {
    // 1. Everything sent this round, read as it is at the start of the round.
    Mailbox sent;
    for (int r = 0; r < p; ++r) {
      const std::vector<Step>& steps = steps_of(r, round);
      for (size_t i = 0; i < steps.size(); ++i) {
        const Step& step = steps[i];
        for (const Chunk* chunk : {&step.src, &step.dst}) {
          const bool used = chunk == &step.src ? step.kind != StepKind::recv_reduce && step.kind != StepKind::recv_copy
                                               : step.kind != StepKind::send;
          if (used && chunk->offset + chunk->count > state[static_cast<size_t>(r)].of(chunk->buffer).size())
            return where(r, round, i) + "chunk outside its buffer";
        }
        if (step.kind != StepKind::reduce_local && step.kind != StepKind::copy_local &&
            (step.peer < 0 || step.peer >= p || step.peer == r))
          return where(r, round, i) + "bad peer " + std::to_string(step.peer);
        if (step.kind != StepKind::send) continue;
        Content content = state[static_cast<size_t>(r)].of(step.src.buffer).read(step.src.offset, step.src.count);
        if (any_undefined(content)) return where(r, round, i) + "sends scratch never written";
        for (const Step& other : steps)
          if (other.kind == StepKind::recv_copy && overlaps(other.dst, step.src))
            return where(r, round, i) + "receives by copy into a range it sends in the same round";
        sent[{r, step.peer}].push_back({std::move(content), step.src.count});
      }
    }
    // 2. Receives, matched to the sends in order per (sender, receiver) pair.
    std::map<std::pair<int, int>, size_t> matched;  // (from, to) -> messages consumed
    for (int r = 0; r < p; ++r) {
      const std::vector<Step>& steps = steps_of(r, round);
      for (size_t i = 0; i < steps.size(); ++i) {
        const Step& step = steps[i];
        if (step.kind != StepKind::recv_reduce && step.kind != StepKind::recv_copy) continue;
        size_t& consumed = matched[{step.peer, r}];
        const auto box = sent.find({step.peer, r});
        const Message* message =
            box != sent.end() && consumed < box->second.size() ? &box->second[consumed] : nullptr;
        if (!message) return where(r, round, i) + "receives from " + std::to_string(step.peer) + " which sends nothing to match";
        ++consumed;
        if (message->count != step.dst.count)
          return where(r, round, i) + "receives " + std::to_string(step.dst.count) + " elements, peer sends " + std::to_string(message->count);
        Cells<Words>& cells = state[static_cast<size_t>(r)].of(step.dst.buffer);
        if (step.kind == StepKind::recv_copy)
          cells.write(step.dst.offset, message->content);
        else
          cells.reduce(step.dst.offset, message->content);
      }
    }
    for (const auto& [pair, messages] : sent)
      if (matched[pair] != messages.size())
        return "rank " + std::to_string(pair.first) + " round " + std::to_string(round) +
               ": a send to " + std::to_string(pair.second) + " has no matching receive";
    // 3. Local steps, in order.
    for (int r = 0; r < p; ++r) {
      const std::vector<Step>& steps = steps_of(r, round);
      for (size_t i = 0; i < steps.size(); ++i) {
        const Step& step = steps[i];
        if (step.kind != StepKind::reduce_local && step.kind != StepKind::copy_local) continue;
        RankState<Words>& rs = state[static_cast<size_t>(r)];
        Content content = rs.of(step.src.buffer).read(step.src.offset, step.src.count);
        if (any_undefined(content)) return where(r, round, i) + "reads scratch never written";
        if (step.src.count != step.dst.count) return where(r, round, i) + "local step with unequal chunks";
        if (step.kind == StepKind::copy_local)
          rs.of(step.dst.buffer).write(step.dst.offset, content);
        else
          rs.of(step.dst.buffer).reduce(step.dst.offset, content);
      }
    }
  }

  for (int r = 0; r < p; ++r) {
    size_t at = 0;
    for (const Piece<Words>& piece : state[static_cast<size_t>(r)].work.read(0, count)) {
      if (const std::string problem = wrong_sum(piece.cell, p); !problem.empty())
        return "rank " + std::to_string(r) + ": elements [" + std::to_string(at) + ", " +
               std::to_string(at + piece.length) + ") " + problem;
      at += piece.length;
    }
  }
  return {};
}

}  // namespace

std::string verify_allreduce(const std::vector<Schedule>& schedules) {
  const size_t p = schedules.size();
  if (p < 1 || p > kMaxVerifiedRanks)
    return "the verifier handles 1.." + std::to_string(kMaxVerifiedRanks) + " ranks, not " + std::to_string(p);
  if (p <= 64) return verify<1>(schedules);
  if (p <= 256) return verify<4>(schedules);
  return verify<kMaxVerifiedRanks / 64>(schedules);
}

}  // namespace sb
