#include "collectives/transports/shm_transport.hpp"

#include <algorithm>
#include <cstring>

#include "collectives/mpi_types.hpp"
#include "common/check.hpp"
#include "kernels/reduce.hpp"

namespace sb {
namespace {

constexpr int kTag = 0x5c;

bool overlaps(const Chunk& a, const Chunk& b) {
  return a.buffer == b.buffer && a.offset < b.offset + b.count && b.offset < a.offset + a.count;
}

}  // namespace

ShmTransport::ShmTransport(MPI_Comm comm) {
  SB_MPI_CHECK(MPI_Comm_dup(comm, &comm_));
  int rank = 0, nranks = 1;
  SB_MPI_CHECK(MPI_Comm_rank(comm_, &rank));
  SB_MPI_CHECK(MPI_Comm_size(comm_, &nranks));
  SB_MPI_CHECK(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node_));
  int node_rank = 0;
  SB_MPI_CHECK(MPI_Comm_rank(node_, &node_rank));
  // Which world ranks share this node, and their rank in it: every rank learns the world rank of
  // its node's first rank (its node's name, in effect) and everybody gathers those.
  int leader = rank;
  SB_MPI_CHECK(MPI_Bcast(&leader, 1, MPI_INT, 0, node_));
  std::vector<int> leaders(static_cast<size_t>(nranks)), node_ranks(static_cast<size_t>(nranks));
  SB_MPI_CHECK(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm_));
  SB_MPI_CHECK(MPI_Allgather(&node_rank, 1, MPI_INT, node_ranks.data(), 1, MPI_INT, comm_));
  node_rank_of_.assign(static_cast<size_t>(nranks), -1);
  for (int r = 0; r < nranks; ++r)
    if (leaders[static_cast<size_t>(r)] == leader) node_rank_of_[static_cast<size_t>(r)] = node_ranks[static_cast<size_t>(r)];
}

ShmTransport::~ShmTransport() {
  for (Window& w : windows_) MPI_Win_free(&w.win);
  MPI_Comm_free(&node_);
  MPI_Comm_free(&comm_);
}

void* ShmTransport::allocate(size_t bytes) {
  Window w;
  void* base = nullptr;
  SB_MPI_CHECK(MPI_Win_allocate_shared(static_cast<MPI_Aint>(std::max<size_t>(bytes, 64)), 1, MPI_INFO_NULL,
                                       node_, &base, &w.win));
  w.mine = static_cast<unsigned char*>(base);
  w.peers.assign(node_rank_of_.size(), nullptr);
  for (size_t r = 0; r < node_rank_of_.size(); ++r) {
    if (node_rank_of_[r] < 0) continue;
    MPI_Aint size = 0;
    int unit = 0;
    void* peer = nullptr;
    SB_MPI_CHECK(MPI_Win_shared_query(w.win, node_rank_of_[r], &size, &unit, &peer));
    w.peers[r] = static_cast<unsigned char*>(peer);
  }
  windows_.push_back(std::move(w));
  return windows_.back().mine;
}

void ShmTransport::release(void* buffer) {
  for (auto it = windows_.begin(); it != windows_.end(); ++it)
    if (it->mine == buffer) {
      MPI_Win_free(&it->win);
      windows_.erase(it);
      return;
    }
}

void ShmTransport::execute(const Schedule& schedule, void* work, DataType type, RedOp op) {
  SB_CHECK(schedule.scratch_count == 0, "the shm transport runs schedules without scratch");
  const auto window = std::find_if(windows_.begin(), windows_.end(),
                                   [&](const Window& w) { return w.mine == work; });
  SB_CHECK(window != windows_.end(), "the working buffer is not in a shared window");
  const size_t element = size_of(type);
  const MPI_Datatype mpi_type = mpi_datatype(type);
  unsigned char* mine = window->mine;
  auto local = [&](size_t offset) { return mine + offset * element; };

  // Every rank of the node takes part in every round's barriers, so all run as many rounds as the
  // longest schedule among them (trailing rounds a rank has no steps in are left off its list).
  long long rounds = static_cast<long long>(schedule.rounds.size()), node_rounds = 0;
  SB_MPI_CHECK(MPI_Allreduce(&rounds, &node_rounds, 1, MPI_LONG_LONG, MPI_MAX, node_));
  const Round nothing;
  for (long long index = 0; index < node_rounds; ++index) {
    const Round& round = index < rounds ? schedule.rounds[static_cast<size_t>(index)] : nothing;
    size_t staged = 0;
    for (const Step& step : round.steps)
      if (step.kind == StepKind::recv_reduce || step.kind == StepKind::recv_copy) staged += step.dst.count * element;
    if (staging_.size() < staged) staging_.resize(staged);

    SB_MPI_CHECK(MPI_Barrier(node_));  // every peer's buffer is as of the start of the round
    requests_.clear();
    struct Pending {
      const Step* step;
      unsigned char* from;
    };
    std::vector<Pending> pending;  // results to apply after the second barrier
    size_t offset = 0;
    for (const Step& step : round.steps) {
      if (step.kind != StepKind::recv_reduce && step.kind != StepKind::recv_copy) continue;
      const size_t bytes = step.dst.count * element;
      unsigned char* peer = window->peers[static_cast<size_t>(step.peer)];
      if (!peer) {  // on another node
        unsigned char* into = staging_.data() + offset;
        offset += bytes;
        SB_MPI_CHECK(MPI_Irecv(into, static_cast<int>(step.dst.count), mpi_type, step.peer, kTag, comm_,
                               &requests_.emplace_back()));
        pending.push_back({&step, into});
        continue;
      }
      const unsigned char* source = peer + step.dst.offset * element;
      bool sent_this_round = false;
      for (const Step& other : round.steps)
        sent_this_round = sent_this_round || (other.kind == StepKind::send && overlaps(other.src, step.dst));
      if (sent_this_round) {  // a peer may still be reading this range: stage, apply later
        unsigned char* into = staging_.data() + offset;
        offset += bytes;
        std::memcpy(into, source, bytes);
        pending.push_back({&step, into});
      } else if (step.kind == StepKind::recv_copy) {
        std::memcpy(local(step.dst.offset), source, bytes);
      } else {
        reduce_into_cpu(local(step.dst.offset), source, step.dst.count, type, op);
      }
    }
    for (const Step& step : round.steps)
      if (step.kind == StepKind::send && !window->peers[static_cast<size_t>(step.peer)])
        SB_MPI_CHECK(MPI_Isend(local(step.src.offset), static_cast<int>(step.src.count), mpi_type, step.peer,
                               kTag, comm_, &requests_.emplace_back()));
    SB_MPI_CHECK(MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE));
    SB_MPI_CHECK(MPI_Barrier(node_));  // nobody reads this round's chunks any more

    for (const Pending& p : pending) {
      if (p.step->kind == StepKind::recv_copy)
        std::memcpy(local(p.step->dst.offset), p.from, p.step->dst.count * element);
      else
        reduce_into_cpu(local(p.step->dst.offset), p.from, p.step->dst.count, type, op);
    }
    for (const Step& step : round.steps) {
      if (step.kind == StepKind::reduce_local)
        reduce_into_cpu(local(step.dst.offset), local(step.src.offset), step.dst.count, type, op);
      else if (step.kind == StepKind::copy_local)
        std::memmove(local(step.dst.offset), local(step.src.offset), step.dst.count * element);
    }
  }
}

}  // namespace sb
