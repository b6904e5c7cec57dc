#include "collectives/buckets/bucket_packing.hpp"

#include <cstring>

namespace sb {

void pack_bucket(const Bucket& bucket, const std::vector<float*>& gradients, float* fused, float weight) {
  for (const BucketPiece& piece : bucket.pieces) {
    const float* in = gradients[piece.tensor] + piece.offset;
    float* out = fused + piece.bucket_offset;
    if (weight == 1.0f) {
      std::memcpy(out, in, piece.count * sizeof(float));
    } else {
      for (size_t i = 0; i < piece.count; ++i) out[i] = in[i] * weight;
    }
  }
}

void unpack_bucket(const Bucket& bucket, const std::vector<float*>& gradients, const float* fused, float scale) {
  for (const BucketPiece& piece : bucket.pieces) {
    float* out = gradients[piece.tensor] + piece.offset;
    const float* in = fused + piece.bucket_offset;
    for (size_t i = 0; i < piece.count; ++i) out[i] = in[i] * scale;
  }
}

}  // namespace sb
