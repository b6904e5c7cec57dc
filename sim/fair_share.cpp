#include "sim/fair_share.hpp"

#include <limits>

namespace sb::sim {

std::vector<double> max_min_rates(const std::vector<FlowLinks>& flows, const std::vector<double>& capacities) {
  std::vector<double> left = capacities;
  std::vector<int> unfixed_on(capacities.size(), 0);
  std::vector<std::vector<int>> flows_on(capacities.size());
  for (size_t f = 0; f < flows.size(); ++f)
    for (int k = 0; k < flows[f].count; ++k) {
      ++unfixed_on[flows[f].link[k]];
      flows_on[flows[f].link[k]].push_back(static_cast<int>(f));
    }
  std::vector<double> rates(flows.size(), 0);
  std::vector<char> fixed(flows.size(), 0);
  size_t remaining = flows.size();
  while (remaining > 0) {
    // The share at which the first links fill when every unfixed flow grows at the same rate.
    double share = std::numeric_limits<double>::infinity();
    for (size_t l = 0; l < capacities.size(); ++l)
      if (unfixed_on[l] > 0) share = std::min(share, left[l] / unfixed_on[l]);
    if (share == std::numeric_limits<double>::infinity()) break;  // flows without links stay at 0
    // Every link that fills at that share (many at once in a symmetric round) fixes its flows.
    const double full = share * (1 + 1e-12);
    for (size_t l = 0; l < capacities.size(); ++l) {
      if (unfixed_on[l] == 0 || left[l] / unfixed_on[l] > full) continue;
      for (int f : flows_on[l]) {
        if (fixed[f]) continue;
        fixed[f] = 1;
        --remaining;
        rates[f] = share;
        for (int k = 0; k < flows[f].count; ++k) {
          const int other = flows[f].link[k];
          left[other] = std::max(0.0, left[other] - share);
          --unfixed_on[other];
        }
      }
    }
  }
  return rates;
}

}  // namespace sb::sim
