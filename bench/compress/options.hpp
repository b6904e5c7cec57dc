#pragma once
// sb-compress's command line.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "collectives/compress/compressor.hpp"

namespace sb {

struct CompressOptions {
  uint64_t min_bytes = 1 << 20, max_bytes = 64 << 20;  // of the fp32 gradient
  uint64_t step_factor = 4;
  int iters = 10, warmup_iters = 2;
  std::vector<std::string> compressors;  // default: all
  CompressorParams params;
  bool error_feedback = true;
  bool device = false;  // --device: also the compressed allreduce on GPU buffers against ncclAllReduce
  std::string model;           // --model: a model's gradients instead of synthetic ones (one size)
  int64_t image_size = 64, batch = 8;
  int convergence_steps = 200;  // --convergence: reference steps of the least-squares check; 0: skip it
  double timeout_seconds = 600;  // without progress (an iteration) before the job ends
  std::string out;  // empty: out/compress-<UTC time>-<pid>.h5
  std::string flags;  // what every rank must be given alike (common/command_line.hpp's flags_to_agree)
  std::map<std::string, std::string> labels;

  std::vector<uint64_t> sizes() const;
};

// Throws UsageError for bad input; nullopt after --help.
std::optional<CompressOptions> parse_compress_options(int argc, char** argv, bool print);

}  // namespace sb
