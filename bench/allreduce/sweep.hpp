#pragma once
// The measurement itself: for each size, out-of-place then in-place, warm-up iterations, timed
// iterations each started from a barrier, then the check. Every rank runs it; rank 0 gathers the
// per-rank times and keeps the results.
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "bench/allreduce/options.hpp"
#include "collectives/allreduce_impl.hpp"
#include "common/memcpy_bandwidth.hpp"
#include "common/mpi_env.hpp"
#include "common/watchdog.hpp"
#include "results/allreduce_record.hpp"

namespace sb {

// The results so far, shared between the main thread and the watchdog's fault handler.
struct ResultsLog {
  std::mutex mutex;
  MemcpyBandwidth memcpy;  // the node's in-run ceiling, measured before the implementations
  std::vector<ImplResult> impls;
};

// Runs every size of `options` on `impl`; calls on_size(result) on rank 0 after each size and
// appends it to log.impls.back(), which the caller has created on every rank.
void run_allreduce_sweep(AllreduceImpl& impl, const AllreduceOptions& options,
                         const WorldLayout& layout, Watchdog& watchdog, ResultsLog& log,
                         const std::function<void(const SizeResult&)>& on_size);

// Reduces per-rank, per-iteration times ([rank][iteration], microseconds) to a PlacementResult's
// time fields and bandwidths. Pure; unit-tested.
void summarise_times(PlacementResult& result, const std::vector<double>& iteration_us, int nranks,
                     int iters, TimeAggregate aggregate, uint64_t bytes);

}  // namespace sb
