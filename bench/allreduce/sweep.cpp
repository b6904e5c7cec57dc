#include "bench/allreduce/sweep.hpp"

#include <algorithm>

#include "collectives/bandwidth.hpp"
#include "collectives/check_data.hpp"
#include "common/check.hpp"
#include "common/sizes.hpp"
#include "common/stats.hpp"

namespace sb {
namespace {

// A buffer in the implementation's memory, released with it.
class ImplBuffer {
 public:
  ImplBuffer(AllreduceImpl& impl, size_t bytes) : impl_(impl), data_(impl.allocate(bytes)) {}
  ~ImplBuffer() { impl_.release(data_); }
  ImplBuffer(const ImplBuffer&) = delete;
  ImplBuffer& operator=(const ImplBuffer&) = delete;
  void* get() const { return data_; }

 private:
  AllreduceImpl& impl_;
  void* data_;
};

}  // namespace

void summarise_times(PlacementResult& r, const std::vector<double>& iteration_us, int nranks,
                     int iters, TimeAggregate aggregate, uint64_t bytes) {
  std::vector<double> rank_mean(static_cast<size_t>(nranks));
  std::vector<double> slowest(static_cast<size_t>(iters), 0.0);
  for (int rank = 0; rank < nranks; ++rank) {
    const auto first = iteration_us.begin() + static_cast<std::ptrdiff_t>(rank) * iters;
    rank_mean[static_cast<size_t>(rank)] = mean(std::vector<double>(first, first + iters));
    for (int i = 0; i < iters; ++i)
      slowest[static_cast<size_t>(i)] = std::max(slowest[static_cast<size_t>(i)], first[i]);
  }
  r.rank_min_us = *std::min_element(rank_mean.begin(), rank_mean.end());
  r.rank_max_us = *std::max_element(rank_mean.begin(), rank_mean.end());
  r.rank_mean_us = mean(rank_mean);
  switch (aggregate) {
    case TimeAggregate::rank0: r.time_us = rank_mean.front(); break;
    case TimeAggregate::mean: r.time_us = r.rank_mean_us; break;
    case TimeAggregate::min: r.time_us = r.rank_min_us; break;
    case TimeAggregate::max: r.time_us = r.rank_max_us; break;
  }
  r.median_us = percentile(slowest, 50);
  r.p99_us = percentile(slowest, 99);
  r.algbw_GBps = algbw_GBps(bytes, r.time_us * 1e-6);
  r.busbw_GBps = r.algbw_GBps * allreduce_busbw_factor(nranks);
}

void run_allreduce_sweep(AllreduceImpl& impl, const AllreduceOptions& options,
                         const WorldLayout& layout, Watchdog& watchdog, ResultsLog& log,
                         const std::function<void(const SizeResult&)>& on_size) {
  const size_t element = size_of(options.type);
  const size_t max_count = options.max_bytes / element;
  // Inputs and expected results depend only on (rank, element), so they are made once for the
  // largest size and every size uses a prefix.
  std::vector<unsigned char> input(options.max_bytes), expected, output;
  fill_check_input(input.data(), max_count, options.type, options.op, layout.rank, layout.nranks);
  if (options.check) {
    expected.resize(options.max_bytes);
    output.resize(options.max_bytes);
    fill_check_expected(expected.data(), max_count, options.type, options.op, layout.nranks);
  }
  ImplBuffer send(impl, options.max_bytes), recv(impl, options.max_bytes);

  auto timed_loop = [&](const void* src, void* dst, size_t count, std::vector<double>& times) {
    for (int i = 0; i < options.warmup_iters; ++i) {
      impl.run(src, dst, count, options.type, options.op);
      watchdog.beat();
    }
    for (int i = 0; i < options.iters; ++i) {
      SB_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
      times[static_cast<size_t>(i)] = impl.run(src, dst, count, options.type, options.op) * 1e6;
      watchdog.beat();
    }
  };
  auto check = [&](const void* result, size_t count) -> int64_t {
    if (!options.check) return -1;
    impl.download(output.data(), result, count * element);
    int64_t wrong = static_cast<int64_t>(
        count_mismatches(output.data(), expected.data(), count, options.type, options.op));
    int64_t total = 0;
    SB_MPI_CHECK(MPI_Allreduce(&wrong, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD));
    return total;
  };
  auto gather = [&](PlacementResult& result, const std::vector<double>& times, uint64_t bytes) {
    std::vector<double> all(layout.rank == 0 ? times.size() * static_cast<size_t>(layout.nranks) : 0);
    SB_MPI_CHECK(MPI_Gather(times.data(), options.iters, MPI_DOUBLE, all.data(), options.iters,
                            MPI_DOUBLE, 0, MPI_COMM_WORLD));
    if (layout.rank != 0) return;
    summarise_times(result, all, layout.nranks, options.iters, options.aggregate, bytes);
    result.iteration_us = std::move(all);
  };

  for (uint64_t bytes : options.sizes()) {
    const size_t count = bytes / element;
    SizeResult size{bytes, count, {}, {}};
    std::vector<double> times(static_cast<size_t>(options.iters));
    const std::string where = " at " + format_size(bytes) + " (" + log.impls.back().name + ")";

    watchdog.phase("running out-of-place" + where);
    impl.upload(send.get(), input.data(), bytes);
    timed_loop(send.get(), recv.get(), count, times);
    gather(size.out_of_place, times, bytes);
    watchdog.phase("checking out-of-place" + where);
    size.out_of_place.wrong = check(recv.get(), count);

    watchdog.phase("running in-place" + where);
    impl.upload(recv.get(), input.data(), bytes);
    timed_loop(recv.get(), recv.get(), count, times);
    gather(size.in_place, times, bytes);
    // The timed in-place iterations reduced their own results; check a fresh one.
    watchdog.phase("checking in-place" + where);
    if (options.check) {
      impl.upload(recv.get(), input.data(), bytes);
      impl.run(recv.get(), recv.get(), count, options.type, options.op);
    }
    size.in_place.wrong = check(recv.get(), count);

    if (layout.rank == 0) {
      std::lock_guard<std::mutex> lock(log.mutex);
      log.impls.back().sizes.push_back(size);
    }
    if (layout.rank == 0) on_size(size);
  }
}

}  // namespace sb
