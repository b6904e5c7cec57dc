#include "collectives/transports/shm_transport.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "collectives/mpi_types.hpp"
#include "common/check.hpp"
#include "kernels/reduce.hpp"

namespace sb {
namespace {

constexpr int kTag = 0x5c;

void* align_to_line(void* p) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  return reinterpret_cast<void*>((address + 63) & ~uintptr_t{63});
}

void publish(uint64_t& counter, uint64_t value) {
  std::atomic_ref<uint64_t>(counter).store(value, std::memory_order_release);
}

// Spins briefly, then yields: ranks may outnumber cores (mpirun --oversubscribe), and a peer
// that is not running cannot make progress for us. A peer that died leaves this loop to the
// watchdog (-T), which ends the job.
void wait_for(uint64_t& counter, uint64_t value) {
  std::atomic_ref<uint64_t> flag(counter);
  for (int spins = 0; flag.load(std::memory_order_acquire) < value; ++spins)
    if (spins >= 64) sched_yield();
}

// Gathers every node rank's vector of records (node-collective).
std::vector<std::vector<ShmSendRecord>> allgather_records(const std::vector<ShmSendRecord>& mine, MPI_Comm node) {
  int size = 1;
  SB_MPI_CHECK(MPI_Comm_size(node, &size));
  const int my_bytes = static_cast<int>(mine.size() * sizeof(ShmSendRecord));
  std::vector<int> bytes(static_cast<size_t>(size)), displacements(static_cast<size_t>(size));
  SB_MPI_CHECK(MPI_Allgather(&my_bytes, 1, MPI_INT, bytes.data(), 1, MPI_INT, node));
  int total = 0;
  for (int r = 0; r < size; ++r) {
    displacements[static_cast<size_t>(r)] = total;
    total += bytes[static_cast<size_t>(r)];
  }
  std::vector<ShmSendRecord> all(static_cast<size_t>(total) / sizeof(ShmSendRecord));
  SB_MPI_CHECK(MPI_Allgatherv(mine.data(), my_bytes, MPI_BYTE, all.data(), bytes.data(), displacements.data(),
                              MPI_BYTE, node));
  std::vector<std::vector<ShmSendRecord>> by_node_rank(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) {
    const auto first = all.begin() + displacements[static_cast<size_t>(r)] / static_cast<int>(sizeof(ShmSendRecord));
    by_node_rank[static_cast<size_t>(r)].assign(first, first + bytes[static_cast<size_t>(r)] / static_cast<int>(sizeof(ShmSendRecord)));
  }
  return by_node_rank;
}

}  // namespace

ShmTransport::ShmTransport(MPI_Comm comm, int node_size) {
  SB_MPI_CHECK(MPI_Comm_dup(comm, &comm_));
  int nranks = 1;
  SB_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  SB_MPI_CHECK(MPI_Comm_size(comm_, &nranks));
  MPI_Comm shared = MPI_COMM_NULL;
  SB_MPI_CHECK(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &shared));
  SB_MPI_CHECK(MPI_Comm_split(shared, node_size > 0 ? rank_ / node_size : 0, rank_, &node_));
  SB_MPI_CHECK(MPI_Comm_free(&shared));
  int node_rank = 0, node_ranks = 1;
  SB_MPI_CHECK(MPI_Comm_rank(node_, &node_rank));
  SB_MPI_CHECK(MPI_Comm_size(node_, &node_ranks));
  // Which ranks share this node, and their rank in it: every rank learns the rank of its node's
  // first rank (its node's name, in effect) and everybody gathers those.
  int leader = rank_;
  SB_MPI_CHECK(MPI_Bcast(&leader, 1, MPI_INT, 0, node_));
  std::vector<int> leaders(static_cast<size_t>(nranks)), node_ranks_of(static_cast<size_t>(nranks));
  SB_MPI_CHECK(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm_));
  SB_MPI_CHECK(MPI_Allgather(&node_rank, 1, MPI_INT, node_ranks_of.data(), 1, MPI_INT, comm_));
  node_rank_of_.assign(static_cast<size_t>(nranks), -1);
  rank_of_node_rank_.assign(static_cast<size_t>(node_ranks), -1);
  for (int r = 0; r < nranks; ++r)
    if (leaders[static_cast<size_t>(r)] == leader) {
      node_rank_of_[static_cast<size_t>(r)] = node_ranks_of[static_cast<size_t>(r)];
      rank_of_node_rank_[static_cast<size_t>(node_ranks_of[static_cast<size_t>(r)])] = r;
    }

  void* base = nullptr;
  // A window's segments are only 8-byte aligned (Open MPI packs them one after another): each
  // rank's Flags sit at the first cache-line boundary of a segment one line longer.
  SB_MPI_CHECK(MPI_Win_allocate_shared(sizeof(Flags) + alignof(Flags), 1, MPI_INFO_NULL, node_, &base, &flags_win_));
  my_flags_ = new (align_to_line(base)) Flags{};
  peer_flags_.assign(static_cast<size_t>(nranks), nullptr);
  for (int r = 0; r < nranks; ++r) {
    if (node_rank_of_[static_cast<size_t>(r)] < 0) continue;
    MPI_Aint size = 0;
    int unit = 0;
    void* peer = nullptr;
    SB_MPI_CHECK(MPI_Win_shared_query(flags_win_, node_rank_of_[static_cast<size_t>(r)], &size, &unit, &peer));
    peer_flags_[static_cast<size_t>(r)] = static_cast<Flags*>(align_to_line(peer));
  }
  outbox_ = map_window(2 * kOutboxBytes);
  SB_MPI_CHECK(MPI_Barrier(node_));  // every rank's counters are zero before anyone reads them
}

ShmTransport::~ShmTransport() {
  for (Window& w : windows_) MPI_Win_free(&w.win);
  MPI_Win_free(&outbox_.win);
  MPI_Win_free(&flags_win_);
  MPI_Comm_free(&node_);
  MPI_Comm_free(&comm_);
}

void* ShmTransport::allocate(size_t bytes) {
  windows_.push_back(map_window(bytes));
  return windows_.back().mine;
}

ShmTransport::Window ShmTransport::map_window(size_t bytes) {
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
  return w;
}

void ShmTransport::release(void* buffer) {
  for (auto it = windows_.begin(); it != windows_.end(); ++it)
    if (it->mine == buffer) {
      MPI_Win_free(&it->win);
      windows_.erase(it);
      return;
    }
}

const ShmTransport::Window* ShmTransport::window_of(const void* buffer) const {
  for (const Window& w : windows_)
    if (w.mine == buffer) return &w;
  return nullptr;
}

const ShmPlan& ShmTransport::plan_for(const Schedule& schedule, bool in_place, size_t element) {
  // Every rank runs the same sequence of calls, so all miss (and exchange records) together.
  const auto key = std::make_tuple(schedule.count, in_place, element);
  if (auto it = plans_.find(key); it != plans_.end()) return it->second;
  if (plans_.size() >= 8) plans_.clear();
  ShmPlan plan = plan_shm(schedule, in_place, [&](int peer) { return node_rank_of_[static_cast<size_t>(peer)] >= 0; },
                          kOutboxBytes / element);
  const auto by_node_rank = allgather_records(shm_send_records(plan), node_);
  std::vector<std::vector<ShmSendRecord>> by_rank(node_rank_of_.size());
  for (size_t r = 0; r < by_node_rank.size(); ++r) by_rank[static_cast<size_t>(rank_of_node_rank_[r])] = by_node_rank[r];
  SB_CHECK(resolve_shm_sources(plan, rank_, by_rank), "shm: the ranks' schedules do not match");
  return plans_.emplace(key, std::move(plan)).first->second;
}

void ShmTransport::execute(const Schedule& schedule, const void* input, void* work, DataType type, RedOp op) {
  SB_CHECK(schedule.scratch_count == 0, "the shm transport runs schedules without scratch");
  const Window* work_window = window_of(work);
  SB_CHECK(work_window != nullptr, "the working buffer is not in a shared window");
  const size_t element = size_of(type);
  const Window* input_window = window_of(input);
  if (input_window == nullptr) {  // an input peers cannot see: start from a copy of it
    std::memcpy(work, input, schedule.count * element);
    input_window = work_window;
  }
  const ShmPlan& plan = plan_for(schedule, input_window == work_window, element);
  const MPI_Datatype mpi_type = mpi_datatype(type);
  const uint64_t call = ++calls_;
  const size_t half = (call % 2) * kOutboxBytes;
  auto stamp = [call](size_t round) { return (call << 32) | round; };
  auto at = [&](const Window* w, size_t offset) { return w->mine + offset * element; };
  auto land = [&](const ShmReceive& receive, const unsigned char* data) {
    for (const ShmPiece& piece : receive.pieces) {
      const unsigned char* from = data + piece.from * element;
      switch (piece.apply) {
        case ShmApply::copy: std::memcpy(at(work_window, piece.offset), from, piece.count * element); break;
        case ShmApply::reduce_into: reduce_into_cpu(at(work_window, piece.offset), from, piece.count, type, op); break;
        case ShmApply::reduce_input:
          reduce_cpu(at(work_window, piece.offset), at(input_window, piece.offset), from, piece.count, type, op);
          break;
      }
    }
  };

  std::vector<unsigned char*>& staged_at = staged_at_;
  for (size_t index = 0; index < plan.rounds.size(); ++index) {
    const ShmRound& round = plan.rounds[index];
    for (const Chunk& fill : round.fill)
      std::memcpy(at(work_window, fill.offset), at(input_window, fill.offset), fill.count * element);
    for (const ShmSend& send : round.sends)
      if (send.source == ShmSource::outbox)
        std::memcpy(outbox_.mine + half + send.outbox_offset * element,
                    at(send.holder == ShmSource::input ? input_window : work_window, send.offset), send.count * element);
    publish(my_flags_->ready, stamp(index));
    if (round.sends.empty() && round.receives.empty() && round.locals.empty()) continue;

    size_t staged_bytes = 0;
    for (const ShmReceive& receive : round.receives)
      if (receive.staged) staged_bytes += receive.count * element;
    if (staging_.size() < staged_bytes) staging_.resize(staged_bytes);
    staged_at.assign(round.receives.size(), nullptr);
    requests_.clear();
    size_t offset = 0;
    for (size_t i = 0; i < round.receives.size(); ++i) {
      const ShmReceive& receive = round.receives[i];
      if (!receive.staged) continue;
      staged_at[i] = staging_.data() + offset;
      offset += receive.count * element;
      if (!receive.on_node)
        SB_MPI_CHECK(MPI_Irecv(staged_at[i], static_cast<int>(receive.count), mpi_type, receive.peer, kTag, comm_,
                               &requests_.emplace_back()));
    }
    for (const ShmSend& send : round.sends)
      if (!send.on_node)
        SB_MPI_CHECK(MPI_Isend(at(send.source == ShmSource::input ? input_window : work_window, send.offset),
                               static_cast<int>(send.count), mpi_type, send.peer, kTag, comm_,
                               &requests_.emplace_back()));

    for (size_t i = 0; i < round.receives.size(); ++i) {
      const ShmReceive& receive = round.receives[i];
      if (!receive.on_node) continue;
      wait_for(peer_flags_[static_cast<size_t>(receive.peer)]->ready, stamp(index));
      const Window* from = receive.source == ShmSource::input  ? input_window
                           : receive.source == ShmSource::work ? work_window
                                                               : &outbox_;
      const unsigned char* data = from->peers[static_cast<size_t>(receive.peer)] +
                                  (receive.source == ShmSource::outbox ? half : 0) + receive.peer_offset * element;
      if (receive.staged)
        std::memcpy(staged_at[i], data, receive.count * element);
      else
        land(receive, data);
    }
    SB_MPI_CHECK(MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE));
    publish(my_flags_->read_done, stamp(index + 1));
    for (int reader : round.work_readers) wait_for(peer_flags_[static_cast<size_t>(reader)]->read_done, stamp(index + 1));

    for (size_t i = 0; i < round.receives.size(); ++i)
      if (staged_at[i]) land(round.receives[i], staged_at[i]);
    for (const Step& step : round.locals) {
      if (step.kind == StepKind::reduce_local)
        reduce_into_cpu(at(work_window, step.dst.offset), at(work_window, step.src.offset), step.dst.count, type, op);
      else
        std::memmove(at(work_window, step.dst.offset), at(work_window, step.src.offset), step.dst.count * element);
    }
  }
  for (const Chunk& fill : plan.final_fill)
    std::memcpy(at(work_window, fill.offset), at(input_window, fill.offset), fill.count * element);
  for (const auto& [reader, round] : plan.input_readers)
    wait_for(peer_flags_[static_cast<size_t>(reader)]->read_done, stamp(round + 1));
}

}  // namespace sb
