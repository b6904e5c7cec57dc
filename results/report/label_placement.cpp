#include "results/report/label_placement.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sb::report {
namespace {

// A character's size as a fraction of the plot's frame (about 7 x 15 px of a frame of about
// 700 x 480 px), and the lines a label may take.
constexpr double kCharWidth = 0.011, kCharHeight = 0.032;
constexpr int kLines = 4;

double along(double value, Scale scale) {
  if (scale == Scale::log2 || scale == Scale::bytes) return std::log2(std::max(value, 1e-300));
  if (scale == Scale::log10) return std::log10(std::max(value, 1e-300));
  return value;
}

struct Box {
  double left, right, middle;  // frame fractions: the text's extent and its line's height
};

bool overlap(const Box& a, const Box& b) {
  return a.left < b.right && b.left < a.right && std::fabs(a.middle - b.middle) < kCharHeight;
}

}  // namespace

double label_line_offset(int line) { return 0.6 - 1.2 * line; }

std::vector<std::vector<int>> label_lines(const Plot& plot) {
  // The frame's extent over the points, as gnuplot autoscales it (a linear y axis from zero).
  double x_low = std::numeric_limits<double>::infinity(), x_high = -x_low, y_low = x_low, y_high = -x_low;
  for (const Series& s : plot.series)
    for (size_t k = 0; k < s.x.size(); ++k) {
      x_low = std::min(x_low, along(s.x[k], plot.x_scale));
      x_high = std::max(x_high, along(s.x[k], plot.x_scale));
      y_low = std::min(y_low, along(s.y[k], plot.y_scale));
      y_high = std::max(y_high, along(s.y[k], plot.y_scale));
    }
  if (plot.y_scale == Scale::linear && plot.y_from_zero) y_low = std::min(y_low, 0.0);
  auto fraction = [](double v, double low, double high) { return high > low ? (v - low) / (high - low) : 0.5; };

  std::vector<std::vector<int>> lines(plot.series.size());
  std::vector<Box> placed;
  for (size_t i = 0; i < plot.series.size(); ++i) {
    const Series& s = plot.series[i];
    for (size_t k = 0; k < s.point_labels.size() && k < s.x.size(); ++k) {
      const double x = fraction(along(s.x[k], plot.x_scale), x_low, x_high);
      const double y = fraction(along(s.y[k], plot.y_scale), y_low, y_high);
      const double width = static_cast<double>(s.point_labels[k].size()) * kCharWidth;
      int chosen = 0;
      for (int line = 0; line < kLines; ++line) {
        const Box box{x + kCharWidth, x + kCharWidth + width, y + label_line_offset(line) * kCharHeight};
        if (std::none_of(placed.begin(), placed.end(), [&](const Box& b) { return overlap(box, b); })) {
          chosen = line;
          break;
        }
      }
      placed.push_back({x + kCharWidth, x + kCharWidth + width, y + label_line_offset(chosen) * kCharHeight});
      lines[i].push_back(chosen);
    }
  }
  return lines;
}

}  // namespace sb::report
