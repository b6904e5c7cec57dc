#include <cmath>
#include <algorithm>

#include "collectives/compress/compressors.hpp"
#include "common/text_fields.hpp"
#include "common/usage_error.hpp"

namespace sb {

const std::vector<std::string_view>& compressor_names() {
  static const std::vector<std::string_view> names = {"none", "fp16", "bf16", "topk", "threshold", "randomk", "sign", "efsign", "onebit", "qsgd", "terngrad", "powersgd"};
  return names;
}

void Compressor::compress_with_feedback(float* residual, const float* gradient, size_t count, uint64_t step,
                                        unsigned char* payload) {
  for (size_t i = 0; i < count; ++i) residual[i] += gradient[i];
  compress(residual, count, step, payload);
  decompress_add(payload, count, step, -1.0f, residual);
}

void Compressor::decompress(const unsigned char* payload, size_t count, uint64_t step, float weight, float* out) const {
  std::fill(out, out + count, 0.0f);
  decompress_add(payload, count, step, weight, out);
}

void Compressor::aggregate(const unsigned char* received, size_t count, uint64_t step, int nranks, float* out) {
  const float average = 1.0f / static_cast<float>(nranks);
  if (carrier() == Carrier::allreduce) return decompress(received, count, step, average, out);
  const size_t bytes = payload_bytes(count);
  decompress(received, count, step, 1.0f, out);
  for (int r = 1; r < nranks; ++r) decompress_add(received + static_cast<size_t>(r) * bytes, count, step, 1.0f, out);
  for (size_t i = 0; i < count; ++i) out[i] *= average;
}

void compress_alone(Compressor& compressor, const float* values, size_t count, uint64_t step,
                    std::vector<unsigned char>& payload) {
  payload.resize(compressor.round_payload_bytes(count, 0));
  compressor.compress(values, count, step, payload.data());
  for (int round = 1; round < compressor.rounds(); ++round) {
    std::vector<unsigned char> next(compressor.round_payload_bytes(count, round));
    compressor.next_round(values, count, round, payload.data(), next.data());
    payload.swap(next);
  }
}

size_t sparse_k(double ratio, size_t count) {
  if (count == 0) return 0;
  return std::clamp<size_t>(static_cast<size_t>(std::llround(ratio * static_cast<double>(count))), 1, count);
}

std::unique_ptr<Compressor> make_compressor(std::string_view name, const CompressorParams& params) {
  if (!(params.ratio > 0 && params.ratio <= 1))
    throw UsageError("--ratio " + std::to_string(params.ratio) + " is not in (0, 1]");
  if (params.levels < 1 || params.levels > 127)
    throw UsageError("--levels " + std::to_string(params.levels) + " is not in 1..127 (QSGD sends a signed byte per value)");
  if (params.rank < 1) throw UsageError("--rank " + std::to_string(params.rank) + " must be at least 1");
  if (name == "none") return make_none_compressor();
  if (name == "fp16") return make_fp16_compressor();
  if (name == "bf16") return make_bf16_compressor();
  if (name == "topk") return make_topk_compressor(params);
  if (name == "threshold") return make_threshold_compressor(params);
  if (name == "randomk") return make_randomk_compressor(params);
  if (name == "sign") return make_sign_compressor();
  if (name == "efsign") return make_efsign_compressor();
  if (name == "onebit") return make_onebit_compressor();
  if (name == "qsgd") return make_qsgd_compressor(params);
  if (name == "terngrad") return make_terngrad_compressor(params);
  if (name == "powersgd") return make_powersgd_compressor(params);
  throw UsageError("unknown compressor '" + std::string(name) + "' (" + join_list(compressor_names()) + ")");
}

}  // namespace sb
