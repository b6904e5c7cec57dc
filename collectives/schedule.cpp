#include "collectives/schedule.hpp"

#include <algorithm>
#include <sstream>

namespace sb {

void Schedule::send(Round& round, int peer, Chunk src) {
  if (src.count) round.steps.push_back({StepKind::send, peer, {}, src});
}
void Schedule::recv_reduce(Round& round, int peer, Chunk dst) {
  if (dst.count) round.steps.push_back({StepKind::recv_reduce, peer, dst, {}});
}
void Schedule::recv_copy(Round& round, int peer, Chunk dst) {
  if (dst.count) round.steps.push_back({StepKind::recv_copy, peer, dst, {}});
}
void Schedule::reduce_local(Round& round, Chunk dst, Chunk src) {
  if (dst.count) round.steps.push_back({StepKind::reduce_local, -1, dst, src});
}
void Schedule::copy_local(Round& round, Chunk dst, Chunk src) {
  if (dst.count) round.steps.push_back({StepKind::copy_local, -1, dst, src});
}


Chunk block_of(size_t count, int blocks, int block) {
  const size_t base = count / static_cast<size_t>(blocks);
  const size_t extra = count % static_cast<size_t>(blocks);
  const size_t b = static_cast<size_t>(block);
  return {BufferId::work, b * base + std::min(b, extra), base + (b < extra ? 1 : 0)};
}

namespace {
std::string describe(const Chunk& c) {
  std::ostringstream text;
  text << (c.buffer == BufferId::work ? "work" : "scratch") << "[" << c.offset << "+" << c.count << "]";
  return text.str();
}
}  // namespace

std::string to_string(const Schedule& s) {
  std::ostringstream text;
  text << "rank " << s.rank << " of " << s.nranks << ", " << s.count << " elements, "
       << s.rounds.size() << " rounds, scratch " << s.scratch_count << "\n";
  for (size_t r = 0; r < s.rounds.size(); ++r) {
    for (const Step& step : s.rounds[r].steps) {
      text << "  round " << r << ": ";
      switch (step.kind) {
        case StepKind::send: text << "send        " << describe(step.src) << " -> " << step.peer; break;
        case StepKind::recv_reduce: text << "recv_reduce " << describe(step.dst) << " <- " << step.peer; break;
        case StepKind::recv_copy: text << "recv_copy   " << describe(step.dst) << " <- " << step.peer; break;
        case StepKind::reduce_local: text << "reduce      " << describe(step.dst) << " += " << describe(step.src); break;
        case StepKind::copy_local: text << "copy        " << describe(step.dst) << " = " << describe(step.src); break;
      }
      text << "\n";
    }
  }
  return text.str();
}

}  // namespace sb
