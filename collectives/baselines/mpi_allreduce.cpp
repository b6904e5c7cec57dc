// The MPI library's own MPI_Allreduce on host buffers: the baseline every host schedule is
// compared with. Whatever algorithm the library picks is what is measured; Open MPI's choice can
// be forced with --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm N.
#include "collectives/baselines/baselines.hpp"

#include "collectives/mpi_types.hpp"
#include "common/check.hpp"
#include "kernels/reduce.hpp"

namespace sb {
namespace {

class MpiAllreduce final : public AllreduceImpl {
 public:
  explicit MpiAllreduce(MPI_Comm comm) {
    SB_MPI_CHECK(MPI_Comm_dup(comm, &comm_));
    SB_MPI_CHECK(MPI_Comm_size(comm_, &nranks_));
  }
  ~MpiAllreduce() override { MPI_Comm_free(&comm_); }

  double run(const void* send, void* recv, size_t count, DataType type, RedOp op) override {
    const double start = MPI_Wtime();
    SB_MPI_CHECK(MPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv, static_cast<int>(count),
                               mpi_datatype(type), mpi_op(type, op), comm_));
    // MPI has no average: it is the sum, divided here. The division is part of the operation and
    // so part of the time.
    if (op == RedOp::avg) divide_cpu(recv, count, type, nranks_);
    return MPI_Wtime() - start;
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int nranks_ = 1;
};

}  // namespace

std::unique_ptr<AllreduceImpl> make_mpi_allreduce(MPI_Comm comm) {
  return std::make_unique<MpiAllreduce>(comm);
}

}  // namespace sb
