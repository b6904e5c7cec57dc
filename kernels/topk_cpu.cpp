#include "kernels/topk.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <numeric>

#include "common/check.hpp"

namespace sb {
namespace {

// |x| as an integer that orders like |x| (NaNs above inf).
inline uint32_t magnitude_key(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits & 0x7fffffffu;
}

constexpr int kBinBits = 11;
constexpr int kShift = 31 - kBinBits;  // keys have 31 bits

}  // namespace

size_t topk_cpu(const float* values, size_t count, size_t k, uint32_t* indices) {
  SB_CHECK(k <= count, "top-k: k is larger than the number of values");
  SB_CHECK(count <= UINT32_MAX, "top-k: more values than 32-bit indices can name");
  if (k == 0) return 0;
  if (k == count) {
    std::iota(indices, indices + count, 0u);
    return k;
  }

  // Pass 1: how many keys fall in each bin of the top bits.
  std::array<size_t, size_t{1} << kBinBits> histogram{};
  for (size_t i = 0; i < count; ++i) ++histogram[magnitude_key(values[i]) >> kShift];
  // The bin of the k-th largest, scanning from the top: `above` keys are in higher bins.
  size_t bin = histogram.size(), above = 0;
  while (above + histogram[bin - 1] < k) above += histogram[--bin];
  --bin;

  // Pass 2: indices above the bin go straight out, in order; the bin's own are candidates.
  struct Candidate {
    uint32_t key, index;
  };
  std::vector<Candidate> candidates;
  candidates.reserve(histogram[bin]);
  std::vector<uint32_t> high;
  high.reserve(above);
  for (size_t i = 0; i < count; ++i) {
    const uint32_t key = magnitude_key(values[i]);
    const uint32_t b = key >> kShift;
    if (b > bin)
      high.push_back(static_cast<uint32_t>(i));
    else if (b == bin)
      candidates.push_back({key, static_cast<uint32_t>(i)});
  }

  // The `need` best candidates by (key descending, index ascending), then back in index order.
  const size_t need = k - above;
  auto better = [](const Candidate& a, const Candidate& b) { return a.key != b.key ? a.key > b.key : a.index < b.index; };
  std::nth_element(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(need - 1), candidates.end(), better);
  const Candidate last = candidates[need - 1];
  std::vector<uint32_t> chosen;
  chosen.reserve(need);
  for (const Candidate& c : candidates)
    if (!better(last, c)) chosen.push_back(c.index);  // c is `last` or better
  std::sort(chosen.begin(), chosen.end());
  std::merge(high.begin(), high.end(), chosen.begin(), chosen.end(), indices);
  return k;
}

std::vector<uint32_t> topk_reference(const float* values, size_t count, size_t k) {
  std::vector<uint32_t> order(count);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return magnitude_key(values[a]) > magnitude_key(values[b]); });
  order.resize(k);
  std::sort(order.begin(), order.end());
  return order;
}

}  // namespace sb
