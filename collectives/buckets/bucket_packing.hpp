#pragma once
// Moving a bucket's gradients in and out of the fused buffer its allreduce works on, shared by the
// host exchanges (gradient_exchange.hpp, cycle_exchange.hpp).
#include <vector>

#include "collectives/buckets/bucket_plan.hpp"

namespace sb {

// Copies each piece of `bucket` from gradients[piece.tensor] into `fused` at its bucket offset,
// times `weight` (this rank's weight in the average; 1 copies as is).
void pack_bucket(const Bucket& bucket, const std::vector<float*>& gradients, float* fused, float weight);
// The reverse: each piece back into its gradient, times `scale` (1/ranks turns the sum into the mean).
void unpack_bucket(const Bucket& bucket, const std::vector<float*>& gradients, const float* fused, float scale);

}  // namespace sb
