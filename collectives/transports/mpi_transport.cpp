#include "collectives/transports/mpi_transport.hpp"

#include <cstring>

#include "collectives/mpi_types.hpp"
#include "common/check.hpp"
#include "kernels/reduce.hpp"

namespace sb {
namespace {
// One tag is enough: rounds run one after another, and MPI keeps the order of the messages
// between a pair of ranks, which is the order the schedule lists them in.
constexpr int kTag = 0x5b;
}  // namespace

MpiTransport::MpiTransport(MPI_Comm comm) { SB_MPI_CHECK(MPI_Comm_dup(comm, &comm_)); }
MpiTransport::~MpiTransport() { MPI_Comm_free(&comm_); }

void MpiTransport::execute(const Schedule& schedule, void* work, DataType type, RedOp op) {
  const size_t element = size_of(type);
  const MPI_Datatype mpi_type = mpi_datatype(type);
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

    requests_.clear();
    size_t offset = 0;
    for (const Step& step : round.steps) {
      if (step.kind != StepKind::recv_reduce && step.kind != StepKind::recv_copy) continue;
      void* into = step.kind == StepKind::recv_copy ? at(step.dst) : staging_.data() + offset;
      if (step.kind == StepKind::recv_reduce) offset += step.dst.count * element;
      SB_MPI_CHECK(MPI_Irecv(into, static_cast<int>(step.dst.count), mpi_type, step.peer, kTag, comm_,
                             &requests_.emplace_back()));
    }
    for (const Step& step : round.steps)
      if (step.kind == StepKind::send)
        SB_MPI_CHECK(MPI_Isend(at(step.src), static_cast<int>(step.src.count), mpi_type, step.peer, kTag,
                               comm_, &requests_.emplace_back()));
    SB_MPI_CHECK(MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE));

    offset = 0;
    for (const Step& step : round.steps) {
      if (step.kind != StepKind::recv_reduce) continue;
      reduce_into_cpu(at(step.dst), staging_.data() + offset, step.dst.count, type, op);
      offset += step.dst.count * element;
    }
    for (const Step& step : round.steps) {
      if (step.kind == StepKind::reduce_local)
        reduce_into_cpu(at(step.dst), at(step.src), step.dst.count, type, op);
      else if (step.kind == StepKind::copy_local)
        std::memmove(at(step.dst), at(step.src), step.dst.count * element);
    }
  }
}

}  // namespace sb
