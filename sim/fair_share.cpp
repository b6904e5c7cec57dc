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
    // The link that is full first when every unfixed flow grows at the same rate.
    int bottleneck = -1;
    double share = std::numeric_limits<double>::infinity();
    for (size_t l = 0; l < capacities.size(); ++l)
      if (unfixed_on[l] > 0 && left[l] / unfixed_on[l] < share) {
        share = left[l] / unfixed_on[l];
        bottleneck = static_cast<int>(l);
      }
    if (bottleneck < 0) break;  // flows without links: left at rate 0 (callers give every flow one)
    for (int f : flows_on[bottleneck]) {
      if (fixed[f]) continue;
      fixed[f] = 1;
      --remaining;
      rates[f] = share;
      for (int k = 0; k < flows[f].count; ++k) {
        const int l = flows[f].link[k];
        left[l] -= share;
        if (left[l] < 0) left[l] = 0;
        --unfixed_on[l];
      }
    }
  }
  return rates;
}

}  // namespace sb::sim
