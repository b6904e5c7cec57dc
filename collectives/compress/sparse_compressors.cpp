// The sparsifiers. top-k sends the k values of largest magnitude with their indices; each rank
// picks its own k, so the payloads do not add up and an allgather carries them. threshold (DGC)
// sends the same k-slot payload, chosen from a sampled threshold instead of an exact top-k. random-k sends
// the values at k indices that every rank draws from the shared seed and the step, so the
// payloads are aligned and an allreduce of k floats carries them (no indices on the wire).
#include <algorithm>
#include <cstring>

#include "collectives/compress/compressors.hpp"
#include "kernels/randomk.hpp"
#include "kernels/sparse.hpp"
#include "kernels/threshold.hpp"
#include "kernels/topk.hpp"

namespace sb {
namespace {

class TopK final : public Compressor {
 public:
  explicit TopK(double ratio) : ratio_(ratio) {}
  std::string_view name() const override { return "topk"; }
  Carrier carrier() const override { return Carrier::allgather; }
  // k indices (uint32) then k values (fp32).
  size_t payload_bytes(size_t count) const override { return sparse_k(ratio_, count) * (sizeof(uint32_t) + sizeof(float)); }
  void compress(const float* values, size_t count, uint64_t, unsigned char* payload) override {
    const size_t k = sparse_k(ratio_, count);
    uint32_t* indices = reinterpret_cast<uint32_t*>(payload);
    float* sent = reinterpret_cast<float*>(payload + k * sizeof(uint32_t));
    topk_cpu(values, count, k, indices);
    for (size_t j = 0; j < k; ++j) sent[j] = values[indices[j]];
  }
  void decompress_add(const unsigned char* payload, size_t count, uint64_t, float weight, float* out) const override {
    const size_t k = sparse_k(ratio_, count);
    const uint32_t* indices = reinterpret_cast<const uint32_t*>(payload);
    const float* sent = reinterpret_cast<const float*>(payload + k * sizeof(uint32_t));
    for (size_t j = 0; j < k; ++j) out[indices[j]] += weight * sent[j];
  }

 private:
  double ratio_;
};

// Deep Gradient Compression's selection: the threshold of the top 2 x ratio is estimated from 1%
// of the values (at least 1024: dgc_sampling), every value above it is a candidate (when fewer
// than k are, the threshold is halved and the pass repeated, up to three times, as DGC does:
// select_with_retries), and the exact top-k
// is settled among the candidates only. With k or more candidates that is exactly top-k (every
// value of the top k is above the threshold); with fewer, all of them are sent and the rest of
// the k slots are empty (index kNoIndex).
class Threshold final : public Compressor {
 public:
  Threshold(double ratio, uint64_t seed) : ratio_(ratio), seed_(seed) {}
  std::string_view name() const override { return "threshold"; }
  Carrier carrier() const override { return Carrier::allgather; }
  size_t payload_bytes(size_t count) const override { return sparse_k(ratio_, count) * (sizeof(uint32_t) + sizeof(float)); }
  void compress(const float* values, size_t count, uint64_t step, unsigned char* payload) override {
    const size_t k = sparse_k(ratio_, count);
    uint32_t* indices = reinterpret_cast<uint32_t*>(payload);
    float* sent = reinterpret_cast<float*>(payload + k * sizeof(uint32_t));
    const ThresholdSampling sampling = dgc_sampling(count, ratio_, seed_, step);
    const float threshold = sampled_threshold(values, count, sampling.ratio, sampling.samples, sampling.key);
    size_t taken = select_with_retries(threshold, k, [&](float t) {
      candidates_.clear();
      select_at_least(values, count, t, candidates_);
      return candidates_.size();
    });
    if (taken > k) {  // exact top-k among the candidates
      gathered_.resize(taken);
      for (size_t j = 0; j < taken; ++j) gathered_[j] = values[candidates_[j]];
      chosen_.resize(k);
      topk_cpu(gathered_.data(), taken, k, chosen_.data());
      for (size_t j = 0; j < k; ++j) chosen_[j] = candidates_[chosen_[j]];
      candidates_.swap(chosen_);
      taken = k;
    }
    for (size_t j = 0; j < k; ++j) {
      indices[j] = j < taken ? candidates_[j] : kNoIndex;
      sent[j] = j < taken ? values[candidates_[j]] : 0.0f;
    }
  }
  void decompress_add(const unsigned char* payload, size_t count, uint64_t, float weight, float* out) const override {
    const size_t k = sparse_k(ratio_, count);
    const uint32_t* indices = reinterpret_cast<const uint32_t*>(payload);
    const float* sent = reinterpret_cast<const float*>(payload + k * sizeof(uint32_t));
    for (size_t j = 0; j < k; ++j)
      if (indices[j] != kNoIndex) out[indices[j]] += weight * sent[j];
  }

 private:
  double ratio_;
  uint64_t seed_;
  std::vector<uint32_t> candidates_, chosen_;
  std::vector<float> gathered_;
};

class RandomK final : public Compressor {
 public:
  RandomK(double ratio, uint64_t seed) : ratio_(ratio), seed_(seed) {}
  std::string_view name() const override { return "randomk"; }
  Carrier carrier() const override { return Carrier::allreduce; }
  size_t payload_bytes(size_t count) const override { return sparse_k(ratio_, count) * sizeof(float); }
  void compress(const float* values, size_t count, uint64_t step, unsigned char* payload) override {
    const std::vector<uint32_t>& indices = indices_for(count, step);
    float* sent = reinterpret_cast<float*>(payload);
    for (size_t j = 0; j < indices.size(); ++j) sent[j] = values[indices[j]];
  }
  void decompress_add(const unsigned char* payload, size_t count, uint64_t step, float weight,
                      float* out) const override {
    const std::vector<uint32_t>& indices = indices_for(count, step);
    const float* sent = reinterpret_cast<const float*>(payload);
    for (size_t j = 0; j < indices.size(); ++j) out[indices[j]] += weight * sent[j];
  }

 private:
  // The draw for (count, step), kept: compress and every decompress of a step use the same one.
  const std::vector<uint32_t>& indices_for(size_t count, uint64_t step) const {
    if (cached_count_ != count || cached_step_ != step) {
      cached_ = randomk_indices(count, sparse_k(ratio_, count), seed_, step);
      cached_count_ = count;
      cached_step_ = step;
    }
    return cached_;
  }

  double ratio_;
  uint64_t seed_;
  mutable std::vector<uint32_t> cached_;
  mutable size_t cached_count_ = SIZE_MAX;
  mutable uint64_t cached_step_ = 0;
};

}  // namespace

std::unique_ptr<Compressor> make_topk_compressor(const CompressorParams& params) {
  return std::make_unique<TopK>(params.ratio);
}
std::unique_ptr<Compressor> make_threshold_compressor(const CompressorParams& params) {
  return std::make_unique<Threshold>(params.ratio, params.seed);
}

std::unique_ptr<Compressor> make_randomk_compressor(const CompressorParams& params) {
  return std::make_unique<RandomK>(params.ratio, params.seed);
}

}  // namespace sb
