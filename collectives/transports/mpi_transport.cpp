#include "collectives/transports/mpi_transport.hpp"

#include <algorithm>
#include <cstring>

#include "collectives/mpi_types.hpp"
#include "common/check.hpp"
#include "kernels/reduce.hpp"

namespace sb {
namespace {
// One tag is enough: rounds run one after another, and MPI keeps the order of the messages
// between a pair of ranks, which is the order the schedule lists them (and their segments) in.
constexpr int kTag = 0x5b;
}  // namespace

MpiTransport::MpiTransport(MPI_Comm comm, size_t segment) : segment_(std::max<size_t>(1, segment)) {
  SB_MPI_CHECK(MPI_Comm_dup(comm, &comm_));
}
MpiTransport::~MpiTransport() { MPI_Comm_free(&comm_); }

void MpiTransport::execute(const Schedule& schedule, const void* input, void* work, DataType type, RedOp op) {
  const size_t element = size_of(type);
  const MPI_Datatype mpi_type = mpi_datatype(type);
  const size_t piece = segment_;
  if (input != work) std::memcpy(work, input, schedule.count * element);
  if (scratch_.size() < schedule.scratch_count * element) scratch_.resize(schedule.scratch_count * element);
  auto at = [&](const Chunk& chunk) {
    unsigned char* base = chunk.buffer == BufferId::work ? static_cast<unsigned char*>(work) : scratch_.data();
    return base + chunk.offset * element;
  };

  for (const Round& round : schedule.rounds) {
    if (round.steps.empty()) continue;
    size_t staged = 0;
    for (const Step& step : round.steps)
      if (step.kind == StepKind::recv_reduce) staged += step.dst.count * element;
    if (staging_.size() < staged) staging_.resize(staged);

    receives_.clear();
    sends_.clear();
    reduces_.clear();
    size_t offset = 0;
    for (const Step& step : round.steps) {
      if (step.kind != StepKind::recv_reduce && step.kind != StepKind::recv_copy) continue;
      // A range this rank also sends this round (recursive doubling's exchange) is reduced into
      // only once the sends are complete: MPI may read it until then.
      const bool sent = std::any_of(round.steps.begin(), round.steps.end(), [&](const Step& other) {
        return other.kind == StepKind::send && overlaps(other.src, step.dst);
      });
      for (size_t done = 0; done < step.dst.count; done += piece) {
        const size_t count = std::min(piece, step.dst.count - done);
        unsigned char* into = at(step.dst) + done * element;
        unsigned char* buffer = into;
        if (step.kind == StepKind::recv_reduce) {
          buffer = staging_.data() + offset;
          offset += count * element;
        }
        SB_MPI_CHECK(MPI_Irecv(buffer, static_cast<int>(count), mpi_type, step.peer, kTag, comm_,
                               &receives_.emplace_back()));
        reduces_.push_back({into, buffer, step.kind == StepKind::recv_reduce ? count : 0, sent});
      }
    }
    for (const Step& step : round.steps) {
      if (step.kind != StepKind::send) continue;
      for (size_t done = 0; done < step.src.count; done += piece)
        SB_MPI_CHECK(MPI_Isend(at(step.src) + done * element, static_cast<int>(std::min(piece, step.src.count - done)),
                               mpi_type, step.peer, kTag, comm_, &sends_.emplace_back()));
    }
    // Reduce each piece the moment it lands, unless its range is still being sent.
    for (size_t left = receives_.size(); left > 0; --left) {
      int index = MPI_UNDEFINED;
      SB_MPI_CHECK(MPI_Waitany(static_cast<int>(receives_.size()), receives_.data(), &index, MPI_STATUS_IGNORE));
      const PendingReduce& pending = reduces_[static_cast<size_t>(index)];
      if (pending.count > 0 && !pending.after_sends) reduce_into_cpu(pending.into, pending.staged, pending.count, type, op);
    }
    SB_MPI_CHECK(MPI_Waitall(static_cast<int>(sends_.size()), sends_.data(), MPI_STATUSES_IGNORE));
    for (const PendingReduce& pending : reduces_)
      if (pending.count > 0 && pending.after_sends) reduce_into_cpu(pending.into, pending.staged, pending.count, type, op);

    for (const Step& step : round.steps) {
      if (step.kind == StepKind::reduce_local)
        reduce_into_cpu(at(step.dst), at(step.src), step.dst.count, type, op);
      else if (step.kind == StepKind::copy_local)
        std::memmove(at(step.dst), at(step.src), step.dst.count * element);
    }
  }
}

}  // namespace sb
