#pragma once
// Where each point's label goes in a scatter plot (sb-report's compressors: ratio against
// speedup), so that the labels of points close together (top-k and threshold at the same ratio
// and speed) do not print over each other: each label takes the first of a few lines beside its
// point, just above it and then lower and lower, that no earlier label holds.
#include <vector>

#include "results/report/plot.hpp"

namespace sb::report {

// The line of every label of every series (empty for a series without labels): 0 just above
// its point, 1 just below, 2 and 3 further below. Positions are estimated for the images
// sb-report draws (1000 x 620 px, gnuplot's default font).
std::vector<std::vector<int>> label_lines(const Plot& plot);

// The label's vertical offset from its point, in characters, on line `line`.
double label_line_offset(int line);

}  // namespace sb::report
