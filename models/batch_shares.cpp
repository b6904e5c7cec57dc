#include "models/batch_shares.hpp"

#include <algorithm>

namespace sb::models {

std::vector<int64_t> shares_by_speed(int64_t batch, const std::vector<double>& seconds_per_image) {
  double total_speed = 0;
  for (double t : seconds_per_image) total_speed += 1.0 / std::max(t, 1e-12);
  std::vector<int64_t> shares(seconds_per_image.size());
  std::vector<double> ideal(shares.size());
  int64_t total = 0;
  for (size_t r = 0; r < shares.size(); ++r) {
    ideal[r] = static_cast<double>(batch) / std::max(seconds_per_image[r], 1e-12) / total_speed;
    shares[r] = std::max<int64_t>(1, static_cast<int64_t>(ideal[r]));
    total += shares[r];
  }
  while (total > batch) {
    --*std::max_element(shares.begin(), shares.end());
    --total;
  }
  while (total < batch) {
    size_t neediest = 0;
    for (size_t r = 1; r < shares.size(); ++r)
      if (ideal[r] - static_cast<double>(shares[r]) > ideal[neediest] - static_cast<double>(shares[neediest])) neediest = r;
    ++shares[neediest];
    ++total;
  }
  return shares;
}

}  // namespace sb::models
