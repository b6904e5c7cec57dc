#include "bench/train/record.hpp"

#include <algorithm>
#include <cstdio>

#include "common/check.hpp"
#include "common/peak_memory.hpp"
#include "models/checkpoint.hpp"
#include "results/h5.hpp"
#include "results/save_once.hpp"

namespace sb {
namespace {

void write_config(const h5::Node& group, const models::TrainConfig& c) {
  group.set_attr("model", c.model);
  group.set_attr("data", c.data);
  group.set_attr("backend", c.backend);
  group.set_attr("precision", models::precision_name(c.precision));
  group.set_attr("cudnn_search", std::string(c.cudnn_timed_search ? "timed" : "heuristic"));
  group.set_attr("cuda_graph", static_cast<int64_t>(c.cuda_graph));
  group.set_attr("loss_scale", c.loss_scale);
  group.set_attr("profile_ops", c.profile_ops);
  group.set_attr("trace", c.trace);
  group.set_attr("trace_steps", c.trace.empty() ? int64_t{0} : c.trace_steps);
  group.set_attr("image_size", c.image_size);
  group.set_attr("batch", c.batch);
  group.set_attr("eval_batch", c.eval_batch);
  group.set_attr("epochs", c.epochs);
  group.set_attr("max_steps", c.max_steps);
  group.set_attr("target_accuracy", c.target_accuracy);
  group.set_attr("eval_every", c.eval_every);
  group.set_attr("optimizer", models::optimizer_name(c.optimizer.kind));
  group.set_attr("momentum", static_cast<double>(c.optimizer.momentum));
  group.set_attr("momentum_correction", static_cast<int64_t>(c.optimizer.corrects_momentum()));
  group.set_attr("weight_decay", static_cast<double>(c.optimizer.weight_decay));
  group.set_attr("decay_bn_bias", static_cast<int64_t>(c.optimizer.decay_bn_and_bias));
  group.set_attr("lars_eta", static_cast<double>(c.optimizer.lars_eta));
  group.set_attr("base_lr", c.base_lr);
  group.set_attr("warmup_epochs", c.warmup_epochs);
  const char* decay[] = {"cosine", "poly", "step"};
  group.set_attr("lr_decay", decay[static_cast<int>(c.decay)]);
  group.set_attr("label_smoothing", static_cast<double>(c.label_smoothing));
  group.set_attr("zero_init_residual", static_cast<int64_t>(c.zero_init_residual));
  group.set_attr("seed", static_cast<int64_t>(c.seed));
  group.set_attr("threads", static_cast<int64_t>(c.threads));
  group.set_attr("workers", static_cast<int64_t>(c.workers));
  group.set_attr("resumed", static_cast<int64_t>(c.resume));
  group.set_attr("algo", c.exchange.algorithm);
  group.set_attr("transport", std::string(name_of(c.exchange.impl.transport)));
  group.set_attr("bucket_strategy", bucket_strategy_name(c.bucket_strategy));
  group.set_attr("bucket_mb", c.bucket_mb);
  group.set_attr("cycle_ms", c.bucket_strategy == BucketStrategy::cycle ? c.cycle_ms : 0.0);
  group.set_attr("overlap", static_cast<int64_t>(c.exchange.overlap));
  group.set_attr("progress", progress_name(c.exchange.progress));
  group.set_attr("accumulate", c.accumulate);
  group.set_attr("compressor", c.exchange.compressor);
  group.set_attr("compressor_ratio", c.exchange.compressor_params.ratio);
  group.set_attr("compressor_levels", static_cast<int64_t>(c.exchange.compressor_params.levels));
  group.set_attr("compressor_qsgd_bucket", static_cast<int64_t>(c.exchange.compressor_params.bucket));
  group.set_attr("error_feedback", static_cast<int64_t>(c.exchange.error_feedback));
  group.set_attr("straggler_rank", static_cast<int64_t>(c.straggler_rank));
  group.set_attr("straggler_factor", c.straggler_factor);
  group.set_attr("resize_schedule", models::format_epoch_schedule(c.resize_schedule));
  group.set_attr("batch_schedule", models::format_epoch_schedule(c.batch_schedule));
  group.set_attr("balance", static_cast<int64_t>(c.balance));
  group.set_attr("bn_span", c.bn_span);
}

void write_results(ResultsFile& file, const RunMetadata& metadata, const TrainOptions& o,
                   const models::TrainResult& r, double matmul_gflops, const RankRecords* records,
                   const std::string& status) {
  write_run_metadata(file.root(), metadata);
  write_run_end(file.root(), status);
  const h5::Node train = file.root().create_group("train");
  write_config(train.create_group("config"), o.config);
  train.set_attr("dataset", r.dataset);
  train.set_attr("image_size", r.image_size);
  train.set_attr("parameters", r.parameter_count);
  train.set_attr("train_flops_per_image", r.train_flops_per_image);
  train.set_attr("reached_target", static_cast<int64_t>(r.reached_target));
  train.set_attr("time_to_target_s", r.time_to_target_s);
  train.set_attr("rank_hours_to_target", r.reached_target ? r.time_to_target_s * metadata.layout.nranks / 3600 : -1.0);
  train.set_attr("run_s", r.run_s);
  train.set_attr("resumes", r.resumes);
  train.set_attr("resume_gap_s", r.resume_gap_s);
  if (!r.resume_setting_changes.empty()) train.set_attr("resume_setting_changes", r.resume_setting_changes);
  train.set_attr("steps", r.steps);
  train.set_attr("images_per_s", r.images_per_s);
  train.set_attr("model_gflops_per_s", r.images_per_s * r.train_flops_per_image / 1e9);
  train.set_attr("matmul_gflops_per_s", matmul_gflops);
  train.set_attr("skipped_samples", r.skipped_samples);
  train.set_attr("loss_scale_skipped_steps", r.loss_scale_skipped_steps);
  train.set_attr("loader_images_per_s", r.loader_images_per_s);
  train.set_attr("best_top1", r.best_top1);
  // A complete file's is rank 0's as gathered at the end of training; a partial one's, as it is now.
  const bool gathered = records && !records->peak_host_bytes.empty();
  train.set_attr("peak_host_bytes", gathered ? records->peak_host_bytes.front() : peak_resident_bytes());
  // On a GPU: the device's peak, rank 0's, at the end of training or, in a partial file, of the last epoch.
  const bool device_gathered = records && !records->peak_device_bytes.empty();
  const int64_t device_peak = device_gathered ? records->peak_device_bytes.front() : r.peak_device_bytes;
  if (device_peak > 0) train.set_attr("peak_device_bytes", device_peak);
  models::write_curve(train.create_group("curve"), r.curve);
  train.write("step_seconds", r.step_seconds);
  std::vector<int64_t> buckets, negotiations;  // the same on every rank: they agree on them
  for (const models::StepTimes& t : r.step_times) {
    buckets.push_back(static_cast<int64_t>(t.buckets));
    negotiations.push_back(static_cast<int64_t>(t.negotiations));
  }
  train.write("step_buckets", buckets);
  train.write("step_negotiations", negotiations);
  if (!r.checkpoint_seconds.empty()) train.write("checkpoint_seconds", r.checkpoint_seconds);
  if (records) {
    const std::vector<hsize_t> dims = {static_cast<hsize_t>(metadata.layout.nranks), records->steps};
    train.write("rank_data_s", records->data, dims);
    train.write("rank_compute_s", records->compute, dims);
    train.write("rank_wait_s", records->wait, dims);
    train.write("rank_comm_s", records->comm, dims);
    train.write("rank_negotiation_s", records->negotiation, dims);
    train.write("rank_peak_host_bytes", records->peak_host_bytes);
    if (!records->peak_device_bytes.empty()) train.write("rank_peak_device_bytes", records->peak_device_bytes);
  }
  if (!r.op_profile.empty()) {
    const h5::Node ops = train.create_group("op_profile");
    ops.set_attr("profiled_steps", r.profiled_steps);
    std::vector<std::string> names;
    std::vector<int64_t> calls;
    std::vector<double> seconds;
    for (const models::OpTime& t : r.op_profile) {
      names.push_back(t.op);
      calls.push_back(t.calls);
      seconds.push_back(t.seconds);
    }
    ops.set_attr("ops", names);
    ops.write("calls", calls);
    ops.write("seconds", seconds);
  }
}

}  // namespace

RankRecords gather_rank_records(const models::TrainResult& r, int64_t peak_host_bytes, int nranks) {
  std::vector<double> mine;
  for (const models::StepTimes& t : r.step_times)
    mine.insert(mine.end(), {t.data_s, t.compute_s, t.wait_s, t.comm_s, t.negotiation_s});
  RankRecords out;
  out.steps = r.step_times.size();
  std::vector<double> all(mine.size() * static_cast<size_t>(nranks));
  SB_MPI_CHECK(MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(),
                          static_cast<int>(mine.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD));
  for (size_t i = 0; i < all.size(); i += 5) {
    out.data.push_back(all[i]);
    out.compute.push_back(all[i + 1]);
    out.wait.push_back(all[i + 2]);
    out.comm.push_back(all[i + 3]);
    out.negotiation.push_back(all[i + 4]);
  }
  const int64_t peaks[2] = {peak_host_bytes, r.peak_device_bytes};
  std::vector<int64_t> all_peaks(2 * static_cast<size_t>(nranks));
  SB_MPI_CHECK(MPI_Gather(peaks, 2, MPI_INT64_T, all_peaks.data(), 2, MPI_INT64_T, 0, MPI_COMM_WORLD));
  for (size_t i = 0; i < all_peaks.size(); i += 2) {
    out.peak_host_bytes.push_back(all_peaks[i]);
    out.peak_device_bytes.push_back(all_peaks[i + 1]);
  }
  // On the host there is no device (and the ranks after 0 receive nothing): an empty list then.
  if (std::all_of(out.peak_device_bytes.begin(), out.peak_device_bytes.end(), [](int64_t b) { return b == 0; }))
    out.peak_device_bytes.clear();
  return out;
}

TrainResultsSaver::TrainResultsSaver(std::unique_ptr<ResultsFile> file, const RunMetadata& metadata,
                                     const TrainOptions& options)
    : file_(std::move(file)), metadata_(metadata), options_(options) {}

TrainResultsSaver::~TrainResultsSaver() {
  std::lock_guard<std::timed_mutex> hdf5(h5::library_lock());
  file_.reset();  // an unsaved file's temporary goes with it
}

void TrainResultsSaver::save_complete(const RunMetadata& metadata, const models::TrainResult& result,
                                      const RankRecords& records) {
  std::lock_guard<std::timed_mutex> lock(mutex_);
  save(metadata, result, &records, "complete");
}

void TrainResultsSaver::save_partial(const models::TrainProgress& progress, const std::string& why) {
  std::unique_lock<std::timed_mutex> lock(mutex_, kWaitForHdf5);
  if (!lock.owns_lock()) {
    std::fprintf(stderr, "sb-train: the results are being written by the training thread; not saved again\n");
    return;
  }
  try {
    save(metadata_, progress.snapshot(), nullptr, why);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sb-train: %s\n", e.what());
  }
}

std::unique_lock<std::timed_mutex> TrainResultsSaver::lock_hdf5() {
  std::unique_lock<std::timed_mutex> hdf5(h5::library_lock(), kWaitForHdf5);
  if (!hdf5.owns_lock())
    throw LibraryError("results not saved: another thread held the HDF5 library for " +
                       std::to_string(kWaitForHdf5.count()) + " s (writing a checkpoint or the results)");
  return hdf5;
}

void TrainResultsSaver::save_snapshot(const models::TrainProgress& progress, int64_t epochs_done) {
  std::unique_lock<std::timed_mutex> lock(mutex_, kWaitForHdf5);
  if (!lock.owns_lock() || !file_) return;  // being saved, or saved, for good
  const std::string after = "epoch " + std::to_string(epochs_done);
  std::unique_lock<std::timed_mutex> hdf5;
  try {
    hdf5 = lock_hdf5();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sb-train: the results after %s were not saved (the run goes on): %s\n", after.c_str(), e.what());
    return;
  }
  snapshots_.save(*file_, after, [&](ResultsFile& snapshot, const std::string& status) {
    write_results(snapshot, metadata_, options_, progress.snapshot(), matmul_gflops_, nullptr, status);
  });
}

void TrainResultsSaver::save(const RunMetadata& metadata, const models::TrainResult& result, const RankRecords* records,
                             const std::string& status) {
  if (!file_) return;
  const std::unique_lock<std::timed_mutex> hdf5 = lock_hdf5();
  save_results_once(
      file_, status,
      [&](ResultsFile& file) { write_results(file, metadata, options_, result, matmul_gflops_, records, status); },
      snapshots_.left_on_disk());
}

}  // namespace sb
