#pragma once
// Max-min fair sharing of links among the messages in flight at once (progressive filling): every
// message gets the same rate until some link is full; the messages through that link keep that
// rate, and the rest share what the other links have left. This is the usual flow-level model of a
// network (each flow is TCP-fair or credit-fair on its bottleneck), and it never gives a message
// more than any of its links can carry, so adding traffic never makes a message faster.
#include <array>
#include <cstddef>
#include <vector>

namespace sb::sim {

struct FlowLinks {
  std::array<int, 3> link{};  // indices into the capacities
  int count = 0;
  void add(int index) { link[count++] = index; }
};

// rates[f] for each flow; capacities in bytes/s (every flow must use at least one link).
std::vector<double> max_min_rates(const std::vector<FlowLinks>& flows, const std::vector<double>& capacities);

}  // namespace sb::sim
