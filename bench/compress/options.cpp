#include "bench/compress/options.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>

#include "bench/compress/device_measure.hpp"
#include "common/command_line.hpp"
#include "common/sizes.hpp"
#include "common/text_fields.hpp"
#include "common/usage_error.hpp"
#include "models/resnet.hpp"
#include "results/run_metadata.hpp"

namespace sb {

std::vector<uint64_t> CompressOptions::sizes() const { return size_sweep(min_bytes, max_bytes, step_factor, 0); }

std::optional<CompressOptions> parse_compress_options(int argc, char** argv, bool print) {
  CompressOptions o;
  std::string min_text, max_text, factor_text, compressor_text = "all";
  std::vector<std::string> label_texts;
  int error_feedback = 1;
  CLI::App app("sb-compress: gradient compressors' speed, compression ratio and error, and the compressed\n"
               "allreduce against MPI_Allreduce at the same size in the same run. Run it under mpirun; every\n"
               "rank must be given the same flags.",
               "sb-compress");
  app.add_option("-b,--minbytes", min_text, "smallest fp32 gradient in bytes (K/M/G) [1M]");
  app.add_option("-e,--maxbytes", max_text, "largest [64M]");
  app.add_option("-f,--stepfactor", factor_text, "grow sizes by this factor [4]");
  app.add_option("-n,--iters", o.iters, "timed iterations per measurement [10]");
  app.add_option("-w,--warmup_iters", o.warmup_iters, "untimed iterations first [2]");
  app.add_option("--convergence", o.convergence_steps,
                 "steps of uncompressed descent on the least-squares check; each compressor reports the steps it needs "
                 "to come within 1% of that loss (0: skip the check) [200]");
  app.add_option("--compressor", compressor_text, "comma-separated, or all");
  app.add_option("--model", o.model, "compress this model's gradients (resnet20, resnet50, ...) instead of synthetic ones");
  app.add_option("--image-size", o.image_size, "--model: input size of the backward pass [64]");
  app.add_option("--batch", o.batch, "--model: batch of the backward pass [8]");
  app.add_option("--ratio", o.params.ratio, "top-k, threshold and random-k: fraction of values sent, in (0, 1] [0.01]");
  app.add_option("--levels", o.params.levels, "QSGD's quantisation levels, 1..127 [16]");
  app.add_option("--qsgd-bucket", o.params.bucket, "QSGD: values that share a norm (0: one per tensor) [512]");
  app.add_option("--rank", o.params.rank, "PowerSGD's rank, at least 1 [4]");
  app.add_option("--seed", o.params.seed, "shared seed of random-k's indices [42]");
  app.add_option("--error-feedback", error_feedback, "1: carry what compression drops into the next step [1]");
  app.add_flag("--device", o.device,
               "also run each compressor's compressed allreduce on GPU buffers (its device form) against "
               "ncclAllReduce; one GPU per rank");
  app.add_option("-T,--timeout", o.timeout_seconds,
                 "seconds without progress before the job ends, saving the rows measured; 0: never [600]");
  app.add_option("--out", o.out, "results file [out/compress-<UTC time>-<pid>.h5]");
  app.add_option("--label", label_texts, "key=value tag recorded in the results (repeatable)");
  if (!parse_command_line(app, argc, argv, print)) return std::nullopt;
  o.flags = flags_to_agree(app, {"--out", "--label"});
  if (!min_text.empty()) o.min_bytes = parse_size(min_text, "--minbytes");
  if (!max_text.empty()) o.max_bytes = parse_size(max_text, "--maxbytes");
  if (!factor_text.empty()) o.step_factor = parse_size(factor_text, "--stepfactor");
  if (o.step_factor < 2) throw UsageError("--stepfactor must be at least 2");
  if (o.min_bytes < 4 || o.min_bytes % 4 != 0 || o.max_bytes % 4 != 0)
    throw UsageError("--minbytes and --maxbytes must be whole fp32 values (multiples of 4, at least 4)");
  if (o.min_bytes > o.max_bytes) throw UsageError("--minbytes is larger than --maxbytes");
  if (o.max_bytes > (uint64_t{1} << 31)) throw UsageError("--maxbytes over 2G: payloads must fit MPI's int counts");
  if (o.iters < 1 || o.warmup_iters < 0) throw UsageError("--iters must be at least 1 and --warmup_iters at least 0");
  if (o.timeout_seconds < 0) throw UsageError("--timeout must not be negative");
  if (error_feedback != 0 && error_feedback != 1) throw UsageError("--error-feedback must be 0 or 1");
  if (o.convergence_steps < 0 || o.convergence_steps > 100000) throw UsageError("--convergence must be in 0..100000");
  if (o.image_size < 8 || o.image_size > 1024 || o.batch < 1 || o.batch > 1024)
    throw UsageError("--image-size must be in 8..1024 and --batch in 1..1024");
  if (!o.model.empty()) models::make_resnet_config(o.model, 3, 1000, o.image_size, 1);  // an unknown model throws
  o.error_feedback = error_feedback == 1;
  if (o.device)
    if (const std::string why = device_unavailable(); !why.empty()) throw UsageError("--device: " + why);
  // Names, checked with the parameters by building each compressor once.
  for (const std::string& name : split_list(compressor_text)) {
    if (name == "all")
      for (std::string_view n : compressor_names()) o.compressors.emplace_back(n);
    else
      o.compressors.push_back(name);
  }
  for (const std::string& name : o.compressors) make_compressor(name, o.params);  // throws UsageError
  for (const std::string& label : label_texts) add_label(o.labels, label);
  return o;
}

}  // namespace sb
