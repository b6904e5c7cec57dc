// The sparsifiers. top-k sends the k values of largest magnitude with their indices; each rank
// picks its own k, so the payloads do not add up and an allgather carries them. random-k sends
// the values at k indices that every rank draws from the shared seed and the step, so the
// payloads are aligned and an allreduce of k floats carries them (no indices on the wire).
#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "collectives/compress/compressors.hpp"
#include "kernels/random.hpp"
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
  void decompress_add(const unsigned char* payload, size_t count, uint64_t, float* out) const override {
    const size_t k = sparse_k(ratio_, count);
    const uint32_t* indices = reinterpret_cast<const uint32_t*>(payload);
    const float* sent = reinterpret_cast<const float*>(payload + k * sizeof(uint32_t));
    for (size_t j = 0; j < k; ++j) out[indices[j]] += sent[j];
  }

 private:
  double ratio_;
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
  void decompress_add(const unsigned char* payload, size_t count, uint64_t step, float* out) const override {
    const std::vector<uint32_t>& indices = indices_for(count, step);
    const float* sent = reinterpret_cast<const float*>(payload);
    for (size_t j = 0; j < indices.size(); ++j) out[indices[j]] += sent[j];
  }

 private:
  // k distinct indices of [0, count), ascending, from (seed, step) alone: Floyd's sampling.
  std::vector<uint32_t> draw(size_t count, uint64_t step) const {
    const size_t k = sparse_k(ratio_, count);
    const uint64_t key = random_key(seed_, 0x72616e646b, step);
    std::unordered_set<uint32_t> chosen;
    chosen.reserve(k * 2);
    for (size_t j = count - k; j < count; ++j) {
      const uint32_t t = static_cast<uint32_t>(random_bits(key, j) % (j + 1));
      chosen.insert(chosen.count(t) ? static_cast<uint32_t>(j) : t);
    }
    std::vector<uint32_t> indices(chosen.begin(), chosen.end());
    std::sort(indices.begin(), indices.end());
    return indices;
  }
  // The draw for (count, step), kept: compress and every decompress of a step use the same one.
  const std::vector<uint32_t>& indices_for(size_t count, uint64_t step) const {
    if (cached_count_ != count || cached_step_ != step) {
      cached_ = draw(count, step);
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
std::unique_ptr<Compressor> make_randomk_compressor(const CompressorParams& params) {
  return std::make_unique<RandomK>(params.ratio, params.seed);
}

}  // namespace sb
