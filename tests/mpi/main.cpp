// GoogleTest under MPI: every rank runs every test; only rank 0 prints, and a test fails on rank 0
// when it failed on any rank, so rank 0's summary speaks for the job.
#include <gtest/gtest.h>
#include <mpi.h>

#include "common/check.hpp"

namespace {

// Turns a failure on any rank into a failure on rank 0 at the end of each test.
class AnyRankFails : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo& info) override {
    int failed = info.result()->Failed() ? 1 : 0, any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any && !failed) ADD_FAILURE() << "failed on another rank";
  }
};

}  // namespace

int main(int argc, char** argv) {
  // SERIALIZED: the data-parallel tests' gradient exchange calls MPI from its own thread.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  sb::set_process_rank(rank);
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
  if (rank != 0) delete listeners.Release(listeners.default_result_printer());
  listeners.Append(new AnyRankFails);
  const int result = RUN_ALL_TESTS();
  MPI_Finalize();
  return result;
}
