#pragma once
// Order statistics of timing samples.
#include <vector>

namespace sb {

double mean(const std::vector<double>& samples);
// Nearest-rank percentile, q in [0, 100]; the median is percentile(samples, 50). 0 when empty.
double percentile(std::vector<double> samples, double q);

}  // namespace sb
