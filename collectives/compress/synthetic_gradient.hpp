#pragma once
// Gradient-like test data where no model is at hand: a normal value times a log-normal scale, so
// that magnitudes are heavy-tailed as real gradients' are (a few large, most small), which is
// what makes top-k and the quantisers' trade-offs show. Deterministic from the seed.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace sb {

// `spread` is the log-normal's sigma: 0 gives plain normal values; 1..1.5 is gradient-like.
std::vector<float> heavy_tailed_gradient(size_t count, uint64_t seed, float spread = 1.0f, float scale = 1.0f);

}  // namespace sb
