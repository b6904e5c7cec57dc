#include "kernels/topk.hpp"

#include <algorithm>
#include <array>
#include <numeric>

#include "common/check.hpp"
#include "kernels/magnitude_scan.hpp"

namespace sb {
namespace {

constexpr int kBinBits = 11;
constexpr int kShift = 31 - kBinBits;  // keys have 31 bits
constexpr size_t kBins = size_t{1} << kBinBits;

// Gradients crowd into a few exponents, so consecutive keys mostly land in the same bin, and one
// histogram would make every increment wait for the one before it (a store-to-load chain of a
// few cycles per value). Four histograms, taken in turn and summed at the end, break the chain.
constexpr size_t kHistograms = 4;

std::array<size_t, kBins> magnitude_histogram(const float* values, size_t count) {
  // uint32_t counts (count <= UINT32_MAX): the four tables together fill 32 KiB, one L1.
  std::array<std::array<uint32_t, kBins>, kHistograms> partial{};
  size_t i = 0;
  for (; i + kHistograms <= count; i += kHistograms)
    for (size_t h = 0; h < kHistograms; ++h) ++partial[h][magnitude_key(values[i + h]) >> kShift];
  for (; i < count; ++i) ++partial[0][magnitude_key(values[i]) >> kShift];
  std::array<size_t, kBins> histogram{};
  for (size_t b = 0; b < kBins; ++b)
    for (size_t h = 0; h < kHistograms; ++h) histogram[b] += partial[h][b];
  return histogram;
}

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
  const std::array<size_t, kBins> histogram = magnitude_histogram(values, count);
  // The bin of the k-th largest, scanning from the top: `above` keys are in higher bins.
  size_t bin = kBins, above = 0;
  while (above + histogram[bin - 1] < k) above += histogram[--bin];
  --bin;

  // Pass 2: indices above the bin go straight out, in order; the bin's own are candidates. The
  // histogram says exactly how many of each there are.
  struct Candidate {
    uint32_t key, index;
  };
  std::vector<Candidate> candidates(histogram[bin]);
  std::vector<uint32_t> high(above);
  size_t candidate_count = 0, high_count = 0;
  for_each_at_least(values, count, static_cast<uint32_t>(bin) << kShift, [&](size_t i, uint32_t key) {
    if ((key >> kShift) > bin)
      high[high_count++] = static_cast<uint32_t>(i);
    else
      candidates[candidate_count++] = {key, static_cast<uint32_t>(i)};
  });
  SB_CHECK(high_count == above && candidate_count == candidates.size(), "top-k: the second pass disagrees with the histogram");

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
