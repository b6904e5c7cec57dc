#include "common/memcpy_bandwidth.hpp"

#include <cstring>
#include <vector>

#include "common/check.hpp"
#include "common/stats.hpp"

namespace sb {

MemcpyBandwidth measure_memcpy_bandwidth(uint64_t bytes, int repetitions, MPI_Comm comm) {
  // Both buffers written first, so that page faults are not timed.
  std::vector<unsigned char> from(bytes, 1), to(bytes, 2);
  std::vector<double> seconds;
  for (int i = 0; i < repetitions; ++i) {
    SB_MPI_CHECK(MPI_Barrier(comm));
    const double start = MPI_Wtime();
    std::memcpy(to.data(), from.data(), bytes);
    seconds.push_back(MPI_Wtime() - start);
  }
  const double mine = static_cast<double>(bytes) / percentile(seconds, 50) / 1e9;
  double sum = 0;
  int nranks = 1;
  SB_MPI_CHECK(MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, comm));
  SB_MPI_CHECK(MPI_Comm_size(comm, &nranks));
  return {bytes, sum / nranks};
}

}  // namespace sb
