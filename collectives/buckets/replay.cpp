#include "collectives/buckets/replay.hpp"

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

#include "common/check.hpp"

namespace sb {
namespace {

void sleep_until(double start, double offset) {
  const double wait = start + offset - MPI_Wtime();
  if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
}

}  // namespace

ReplayResult replay_step(GradientAverager& exchange, const BackwardProfile& profile, MPI_Comm comm) {
  const std::vector<size_t> order = readiness_order(profile.ready_s);
  SB_MPI_CHECK(MPI_Barrier(comm));
  exchange.begin_step();
  const double start = MPI_Wtime();
  std::vector<double> ready(profile.tensors.size());
  for (size_t k : order) {
    sleep_until(start, profile.ready_s[k]);
    ready[k] = MPI_Wtime() - start;
    exchange.tensor_ready(k);
  }
  sleep_until(start, profile.backward_s);
  const ExchangeTimes times = exchange.finish();
  ReplayResult r;
  r.start_wtime = start;
  r.ready_s = std::move(ready);
  r.iteration_s = MPI_Wtime() - start;
  r.exposed_s = std::max(r.iteration_s - profile.backward_s, 0.0);
  r.communication_s = times.communication_s;
  r.negotiation_s = times.negotiation_s;
  r.negotiations = times.negotiations;
  r.overlap = r.communication_s > 0 ? std::clamp(1.0 - r.exposed_s / r.communication_s, 0.0, 1.0) : 1.0;
  r.plan = exchange.plan();
  for (const auto& [begin, end] : exchange.bucket_spans()) {
    r.bucket_start_s.push_back(begin - start);
    r.bucket_end_s.push_back(end - start);
  }
  return r;
}

}  // namespace sb
