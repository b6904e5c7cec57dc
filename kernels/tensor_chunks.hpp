#pragma once
// Tables, made on the host and copied to the device, that turn a launch per tensor into one
// launch for all: a fused buffer of several tensors cut into chunks that never straddle two
// tensors, so that a block per chunk does per-tensor work over the whole buffer (the device
// QSGD/TernGrad scale every tensor of a bucket in two launches and round it in one, where a
// launch, and a wait for the host, per tensor cost more than the arithmetic on a model of ~160
// tensors); and runs of floats to move between two buffers. Built and tested on the CPU, copied
// to the device once per buffer layout.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace sb {

// Values a chunk: 64 per thread of a 256-thread block, enough to hide memory latency and few
// enough that a 25M-value model gets ~1,600 blocks.
inline constexpr size_t kTensorChunkValues = 16384;

struct TensorChunks {
  std::vector<uint64_t> begin;        // chunk c covers values [begin[c], begin[c + 1]); chunks + 1 entries
  std::vector<uint32_t> tensor_of;    // chunk c's tensor
  std::vector<uint32_t> first_chunk;  // tensor t's chunks are [first_chunk[t], first_chunk[t + 1]); tensors + 1
  size_t chunks() const { return tensor_of.size(); }
  size_t tensors() const { return first_chunk.size() - 1; }
};

// The chunks of tensors laid end to end, tensor t at [offsets[t], offsets[t + 1]) (offsets from 0,
// non-decreasing, as tensor_offsets gives them); an empty tensor has no chunk. Throws
// std::invalid_argument on offsets that do not describe a buffer, or past 2^32 chunks.
inline TensorChunks chunk_tensors(const std::vector<size_t>& offsets, size_t chunk = kTensorChunkValues) {
  if (offsets.empty() || offsets.front() != 0) throw std::invalid_argument("tensor chunks: offsets must start at 0");
  if (chunk == 0) throw std::invalid_argument("tensor chunks: a chunk of 0 values");
  TensorChunks table;
  for (size_t t = 0; t + 1 < offsets.size(); ++t) {
    if (offsets[t + 1] < offsets[t]) throw std::invalid_argument("tensor chunks: offsets must not decrease");
    table.first_chunk.push_back(static_cast<uint32_t>(table.tensor_of.size()));
    for (size_t at = offsets[t]; at < offsets[t + 1]; at += chunk) {
      if (table.tensor_of.size() >= UINT32_MAX) throw std::invalid_argument("tensor chunks: over 2^32 chunks");
      table.begin.push_back(at);
      table.tensor_of.push_back(static_cast<uint32_t>(t));
    }
  }
  table.first_chunk.push_back(static_cast<uint32_t>(table.tensor_of.size()));
  table.begin.push_back(offsets.back());
  return table;
}

// A run of floats moved between two buffers: to[to + i] = (or +=) from[from + i] for i < count. A
// list of them (device memory) is one launch, a block a run, where a launch a run cost more than
// the copying: PowerSGD's uncompressed tensors, ~100 biases and batch-norm vectors in ResNet-50.
struct FloatRun {
  uint64_t from = 0, to = 0, count = 0;
  bool operator==(const FloatRun&) const = default;
};

// The runs with each merged into the one before where it continues it in both buffers, empty
// ones dropped, and then cut into runs of at most `longest` values.
inline std::vector<FloatRun> merge_and_cut_runs(const std::vector<FloatRun>& runs, size_t longest = kTensorChunkValues) {
  if (longest == 0) throw std::invalid_argument("float runs: a run of 0 values");
  std::vector<FloatRun> merged;
  for (const FloatRun& run : runs) {
    if (run.count == 0) continue;
    if (!merged.empty() && merged.back().from + merged.back().count == run.from &&
        merged.back().to + merged.back().count == run.to)
      merged.back().count += run.count;
    else
      merged.push_back(run);
  }
  std::vector<FloatRun> cut;
  for (const FloatRun& run : merged)
    for (uint64_t at = 0; at < run.count; at += longest)
      cut.push_back({run.from + at, run.to + at, std::min<uint64_t>(longest, run.count - at)});
  return cut;
}

// The same table on the device: the kernels' view of it (device pointers; no CUDA types, so that
// headers without the CUDA toolkit can name it).
struct DeviceTensorChunks {
  const uint64_t* begin = nullptr;
  const uint32_t* tensor_of = nullptr;
  const uint32_t* first_chunk = nullptr;
  uint32_t chunks = 0;
  uint32_t tensors = 0;
};

}  // namespace sb
