#include "bench/compress/record.hpp"

#include "results/h5.hpp"
#include "results/save_once.hpp"

namespace sb {
namespace {

// results[i].convergence is written for i < converged (the check ran for those).
void write_results(ResultsFile& file, const RunMetadata& metadata, const CompressOptions& o,
                   const std::vector<CompressorResults>& results, size_t converged, const std::string& status) {
  h5::Node& root = file.root();
  write_run_metadata(root, metadata);
  write_run_end(root, status);
  const h5::Node compress = root.create_group("compress");
  compress.set_attr("ratio", o.params.ratio);
  compress.set_attr("levels", static_cast<int64_t>(o.params.levels));
  compress.set_attr("qsgd_bucket", static_cast<int64_t>(o.params.bucket));
  compress.set_attr("rank", static_cast<int64_t>(o.params.rank));
  compress.set_attr("seed", static_cast<int64_t>(o.params.seed));
  compress.set_attr("error_feedback", static_cast<int64_t>(o.error_feedback));
  compress.set_attr("iters", static_cast<int64_t>(o.iters));
  compress.set_attr("warmup_iters", static_cast<int64_t>(o.warmup_iters));
  compress.set_attr("gradient", o.model.empty() ? std::string("synthetic heavy-tailed: normal times log-normal(sigma 1), seed 1000 + rank")
                                                : o.model + ": one backward pass at batch " + std::to_string(o.batch) + ", " +
                                                      std::to_string(o.image_size) + " px, random images (seed 1000 + rank)");
  if (o.convergence_steps > 0) {
    const ConvergenceSettings settings = convergence_settings(o);
    compress.set_attr("convergence_problem",
                      "least squares, " + std::to_string(settings.dimension) + " unknowns, " +
                          std::to_string(settings.rows_per_rank) + " rows per rank, full-batch descent at 1/L");
    compress.set_attr("convergence_reference_steps", static_cast<int64_t>(settings.reference_steps));
    compress.set_attr("convergence_max_steps", static_cast<int64_t>(settings.max_steps));
    if (converged > 0) compress.set_attr("convergence_target_loss", results.front().convergence.target_loss);
  }
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& [name, carrier, rows, convergence] = results[i];
    const h5::Node group = compress.create_group(name);
    group.set_attr("carrier", std::string(carrier == Carrier::allreduce ? "allreduce" : "allgather"));
    if (i < converged) {
      group.set_attr("convergence_steps", static_cast<int64_t>(convergence.steps));
      group.set_attr("convergence_final_loss", convergence.final_loss);
    }
    auto column = [&](auto field) {
      std::vector<double> values;
      for (const CompressRow& row : rows) values.push_back(static_cast<double>(row.*field));
      return values;
    };
    std::vector<uint64_t> bytes, payload;
    for (const CompressRow& row : rows) {
      bytes.push_back(row.bytes);
      payload.push_back(row.payload_bytes);
    }
    group.write("size_bytes", bytes);
    group.write("payload_bytes", payload);
    group.write("compression_ratio", column(&CompressRow::ratio));
    group.write("rel_error", column(&CompressRow::rel_error));
    group.write("compress_GBps", column(&CompressRow::compress_GBps));
    group.write("decompress_GBps", column(&CompressRow::decompress_GBps));
    group.write("memcpy_GBps", column(&CompressRow::memcpy_GBps));
    group.write("allreduce_us", column(&CompressRow::allreduce_us));
    group.write("mpi_allreduce_us", column(&CompressRow::mpi_allreduce_us));
    group.write("speedup", column(&CompressRow::speedup));
    if (o.device) {
      group.write("device_allreduce_us", column(&CompressRow::device_allreduce_us));
      group.write("nccl_allreduce_us", column(&CompressRow::nccl_allreduce_us));
      group.write("device_speedup", column(&CompressRow::device_speedup));
    }
  }
}

}  // namespace

ConvergenceSettings convergence_settings(const CompressOptions& o) {
  ConvergenceSettings settings;
  settings.reference_steps = o.convergence_steps;
  settings.max_steps = 20 * o.convergence_steps;
  return settings;
}

void CompressResultsSaver::start_compressor(const std::string& name, Carrier carrier) {
  std::lock_guard<std::mutex> lock(mutex_);
  results_.push_back({name, carrier, {}, {}});
}

void CompressResultsSaver::add_row(const CompressRow& row) {
  std::lock_guard<std::mutex> lock(mutex_);
  results_.back().rows.push_back(row);
}

void CompressResultsSaver::add_convergence(size_t compressor, const ConvergenceResult& result) {
  std::lock_guard<std::mutex> lock(mutex_);
  results_.at(compressor).convergence = result;
  converged_ = compressor + 1;
}

std::vector<CompressorResults> CompressResultsSaver::results() {
  std::lock_guard<std::mutex> lock(mutex_);
  return results_;
}

void CompressResultsSaver::save(const std::string& status) {
  std::lock_guard<std::mutex> lock(mutex_);
  save_results_once(
      file_, status,
      [&](ResultsFile& file) { write_results(file, metadata_, options_, results_, converged_, status); },
      join_clauses(snapshots_.left_on_disk(), "the table printed so far holds the same figures"));
}

void CompressResultsSaver::snapshot(const std::string& after) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!file_) return;
  snapshots_.save_at_break(*file_, after, [&](ResultsFile& file, const std::string& status) {
    write_results(file, metadata_, options_, results_, converged_, status);
  });
}

}  // namespace sb
