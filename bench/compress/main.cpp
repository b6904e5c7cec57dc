// sb-compress: for each compressor and gradient size, on heavy-tailed synthetic gradients (every
// rank its own): compress and decompress speed (GB/s of fp32 input), compression ratio (input
// bytes / payload bytes), relative error ||g - D(C(g))|| / ||g||, and the compressed allreduce's
// time against MPI_Allreduce of the uncompressed gradient at the same size, in the same run, with
// the speed-up. A table on stdout, one HDF5 group per compressor.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include "bench/compress/device_measure.hpp"
#include "bench/compress/options.hpp"
#include "bench/compress/record.hpp"
#include "collectives/compress/compressed_allreduce.hpp"
#include "collectives/compress/ef_convergence.hpp"
#include "collectives/compress/synthetic_gradient.hpp"
#include "models/gradient_sample.hpp"
#include "common/check.hpp"
#include "common/closed_stdout.hpp"
#include "common/mpi_env.hpp"
#include "common/sizes.hpp"
#include "common/stats.hpp"
#include "common/usage_error.hpp"
#include "common/watchdog.hpp"
#include "results/environment_agreement.hpp"
#include "results/program_start.hpp"
#include "results/results_file.hpp"
#include "results/run_metadata.hpp"

namespace sb {
namespace {

constexpr const char* kProgram = "sb-compress";
// Ranks other than 0 wait this much longer before giving up, so that rank 0 reports first.
constexpr double kTimeoutGraceSeconds = 5;

// Median over iterations of the slowest rank's time of `body`, each iteration started together.
// Each iteration is progress for the watchdog.
template <class Body>
double median_slowest_us(int warmup, int iters, Watchdog& watchdog, Body&& body) {
  for (int i = 0; i < warmup; ++i) body();
  std::vector<double> times;
  for (int i = 0; i < iters; ++i) {
    SB_MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    const double start = MPI_Wtime();
    body();
    double mine = (MPI_Wtime() - start) * 1e6, slowest = 0;
    SB_MPI_CHECK(MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    times.push_back(slowest);
    watchdog.beat();
  }
  return percentile(times, 50);
}

double mean_over_ranks(double mine) {
  double sum = 0;
  int nranks = 1;
  SB_MPI_CHECK(MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
  SB_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &nranks));
  return sum / nranks;
}

// `tensors`: what the gradient is made of, for the compressors that work tensor by tensor (PowerSGD,
// TernGrad, QSGD without buckets); empty: synthetic, one tensor.
CompressRow measure(const std::string& name, const std::vector<float>& gradient, const std::vector<TensorView>& tensors,
                    const CompressOptions& o, int rank, int nranks, Watchdog& watchdog) {
  const size_t count = gradient.size();
  const uint64_t bytes = count * sizeof(float);
  CompressorParams params = o.params;
  params.stream = static_cast<uint64_t>(rank);
  params.tensors = tensors;
  std::unique_ptr<Compressor> compressor = make_compressor(name, params);
  CompressRow row;
  row.bytes = bytes;
  row.payload_bytes = compressor->payload_bytes(count);
  row.ratio = static_cast<double>(bytes) / static_cast<double>(row.payload_bytes);

  // Every round of a multi-round compressor (PowerSGD) on this rank alone: what it costs to make
  // the payloads, and the last round's, which decodes to what this rank would send.
  std::vector<unsigned char> payload(row.payload_bytes);
  std::vector<float> decoded(count);
  uint64_t step = 0;
  std::vector<float> copy(count);
  const double memcpy_us = median_slowest_us(o.warmup_iters, o.iters, watchdog, [&] {
    std::memcpy(copy.data(), gradient.data(), bytes);
  });
  row.memcpy_GBps = static_cast<double>(bytes) / (memcpy_us * 1e3);
  const double compress_us = median_slowest_us(o.warmup_iters, o.iters, watchdog, [&] {
    compress_alone(*compressor, gradient.data(), count, step++, payload);
  });
  const double decompress_us = median_slowest_us(o.warmup_iters, o.iters, watchdog, [&] {
    std::fill(decoded.begin(), decoded.end(), 0.0f);
    compressor->decompress_add(payload.data(), count, step - 1, 1.0f, decoded.data());
  });
  row.compress_GBps = static_cast<double>(bytes) / (compress_us * 1e3);
  row.decompress_GBps = static_cast<double>(bytes) / (decompress_us * 1e3);
  double error = 0, norm = 0;
  for (size_t i = 0; i < count; ++i) {
    error += (static_cast<double>(gradient[i]) - decoded[i]) * (static_cast<double>(gradient[i]) - decoded[i]);
    norm += static_cast<double>(gradient[i]) * gradient[i];
  }
  row.rel_error = mean_over_ranks(norm > 0 ? std::sqrt(error / norm) : 0.0);

  // The end-to-end comparison: the compressed allreduce (with error feedback as asked) and the
  // uncompressed MPI_Allreduce + average, on copies of the same gradient.
  CompressedAllreduce allreduce(std::move(compressor), o.error_feedback, MPI_COMM_WORLD);
  std::vector<float> work(count);
  row.allreduce_us = median_slowest_us(o.warmup_iters, o.iters, watchdog, [&] {
    std::copy(gradient.begin(), gradient.end(), work.begin());
    allreduce.run(work.data(), count, step++);
  });
  row.mpi_allreduce_us = median_slowest_us(o.warmup_iters, o.iters, watchdog, [&] {
    std::copy(gradient.begin(), gradient.end(), work.begin());
    SB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, work.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
    const float scale = 1.0f / static_cast<float>(nranks);
    for (float& v : work) v *= scale;
  });
  row.speedup = row.mpi_allreduce_us / row.allreduce_us;
  if (o.device)
    if (const std::optional<DeviceTimes> t = measure_on_device(name, gradient, tensors, o, rank)) {
      row.device_allreduce_us = t->compressed_us;
      row.nccl_allreduce_us = t->nccl_us;
      row.device_speedup = t->nccl_us / t->compressed_us;
    }
  return row;
}

int run(int argc, char** argv, const WorldLayout& layout) {
  const bool root = layout.rank == 0;
  ProgramStart<CompressOptions> start = start_program<CompressOptions>(
      kProgram, "compress", root, [&](bool print) { return parse_compress_options(argc, argv, print); });
  if (start.failed) return kExitUsage;
  if (!start.options) return 0;
  const CompressOptions& o = *start.options;
  RunMetadata metadata = describe_run(kProgram, argc, argv);
  metadata.layout = layout;
  compare_environments(metadata);
  metadata.labels = o.labels;
  CompressResultsSaver saver(std::move(start.file), metadata, o);
  // A rank that hangs (or a peer lost without the launcher noticing) ends the job after
  // --timeout seconds without progress, SIGINT/SIGTERM at once; rank 0 saves the rows measured.
  Watchdog watchdog(o.timeout_seconds, root ? 0 : kTimeoutGraceSeconds,
                    root ? Watchdog::FaultHandler([&](const std::string& reason) { saver.save(reason); })
                         : Watchdog::FaultHandler());
  watchdog.phase("making the gradients");

  // The gradients: a model's, from one backward pass on this rank's own random batch, or synthetic
  // ones at each size.
  std::vector<std::vector<float>> gradients;
  std::vector<TensorView> model_tensors;  // the model's parameters, one view each
  if (!o.model.empty()) {
    models::GradientSample sample =
        models::sample_gradients(o.model, o.image_size, o.batch, 1000 + static_cast<uint64_t>(layout.rank), 1);
    for (size_t t = 0; t < sample.counts.size(); ++t) model_tensors.push_back({sample.counts[t], sample.rows[t]});
    gradients.push_back(std::move(sample.values));
    if (root)
      std::printf("# gradients: %s, one backward pass at batch %lld, %lld px, random images (each rank its own): %zu values\n",
                  o.model.c_str(), static_cast<long long>(o.batch), static_cast<long long>(o.image_size),
                  gradients.front().size());
  } else {
    for (uint64_t bytes : o.sizes())
      gradients.push_back(heavy_tailed_gradient(bytes / sizeof(float), 1000 + static_cast<uint64_t>(layout.rank)));
  }
  if (root) {
    std::printf("# %s: %d ranks, ratio %g, levels %d, qsgd bucket %zu, rank %d, error feedback %s, %d iterations (median of "
                "the slowest rank)\n",
                kProgram, layout.nranks, o.params.ratio, o.params.levels, o.params.bucket, o.params.rank,
                o.error_feedback ? "on" : "off", o.iters);
    std::printf("# %12s  %-9s  %10s  %9s  %10s  %8s  %10s  %11s  %11s  %8s%s\n", "size(B)", "compressor", "ratio", "rel_err",
                "comp(GB/s)", "x_memcpy", "decomp", "allred(us)", "mpi(us)", "speedup",
                o.device ? "      gpu(us)     nccl(us)  gpu_speedup" : "");
    std::fflush(stdout);
  }
  // A snapshot after each compressor's rows and each one's convergence check, but the last.
  saver.plan_snapshots(o.compressors.size() * (o.convergence_steps > 0 ? 2 : 1));
  auto snapshot = [&](const std::string& after) {
    if (!root) return;
    watchdog.phase("saving the results so far");
    saver.snapshot(after);
  };
  for (const std::string& name : o.compressors) {
    saver.start_compressor(name, make_compressor(name, o.params)->carrier());
    for (const std::vector<float>& gradient : gradients) {
      const uint64_t bytes = gradient.size() * sizeof(float);
      watchdog.phase("measuring " + name + " at " + std::to_string(bytes) + " bytes");
      const CompressRow row = measure(name, gradient, model_tensors, o, layout.rank, layout.nranks, watchdog);
      saver.add_row(row);
      if (root) {
        std::printf("  %12llu  %-9s  %9.1fx  %9.2e  %10.2f  %8.2f  %10.2f  %11.1f  %11.1f  %7.2fx",
                    static_cast<unsigned long long>(bytes), name.c_str(), row.ratio, row.rel_error, row.compress_GBps,
                    row.compress_GBps / row.memcpy_GBps, row.decompress_GBps, row.allreduce_us, row.mpi_allreduce_us,
                    row.speedup);
        if (o.device && row.device_allreduce_us >= 0)
          std::printf("  %11.1f  %11.1f  %10.2fx", row.device_allreduce_us, row.nccl_allreduce_us, row.device_speedup);
        else if (o.device)
          std::printf("  %11s  %11s  %11s", "-", "-", "-");
        std::printf("\n");
        std::fflush(stdout);
      }
    }
    snapshot(name + "'s rows");
  }
  if (o.convergence_steps > 0) {
    const ConvergenceSettings settings = convergence_settings(o);
    if (root)
      std::printf("# convergence (error feedback %s): least squares, %d unknowns, %d rows per rank; steps to come within\n"
                  "# 1%% of uncompressed descent's loss after %d steps (at most %d)\n#   %-10s  %8s  %12s  %10s\n",
                  o.error_feedback ? "on" : "off", settings.dimension, settings.rows_per_rank, settings.reference_steps,
                  settings.max_steps, "compressor", "steps", "final loss", "vs none");
    const std::vector<CompressorResults> results = saver.results();
    for (size_t i = 0; i < results.size(); ++i) {
      watchdog.phase("checking " + results[i].name + "'s convergence");
      CompressorResults r = results[i];
      r.convergence = ef_convergence(r.name, o.params, o.error_feedback, settings, MPI_COMM_WORLD);
      saver.add_convergence(i, r.convergence);
      snapshot(r.name + "'s convergence check");
      if (!root) continue;
      if (r.convergence.steps >= 0)
        std::printf("    %-10s  %8d  %12.4e  %9.2fx\n", r.name.c_str(), r.convergence.steps, r.convergence.final_loss,
                    static_cast<double>(r.convergence.steps) / settings.reference_steps);
      else
        std::printf("    %-10s  %8s  %12.4e  %10s\n", r.name.c_str(),
                    r.convergence.steps == ConvergenceResult::kDiverged ? "diverged" : "never", r.convergence.final_loss, "-");
      std::fflush(stdout);
    }
  }
  saver.save("complete");
  return 0;
}

}  // namespace
}  // namespace sb

int main(int argc, char** argv) {
  sb::outlive_closed_stdout("sb-compress");
  sb::block_termination_signals();  // before MPI's threads start: SIGINT/SIGTERM go to the watchdog
  sb::MpiSession session(&argc, &argv);
  const sb::WorldLayout layout = sb::discover_world_layout();
  try {
    return sb::run(argc, argv, layout);
  } catch (const std::exception& e) {
    sb::die(__FILE__, __LINE__, std::string("sb-compress: ") + e.what());
  }
}
