#include "models/data/resample.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/random.hpp"

namespace sb::models {
namespace {

// One output coordinate's taps along an axis: source pixels [first, first + weights.size()).
struct Taps {
  int first = 0;
  std::vector<float> weights;
};

// PIL's bilinear resampling along one axis: output pixel o's centre falls at start + (o + 0.5) x
// scale in the source; a triangle of half-width max(scale, 1) around it weighs the pixels it
// covers (their centres at k + 0.5), clipped to [lo, hi) and renormalised.
std::vector<Taps> axis_taps(double start, double length, int64_t outputs, int lo, int hi) {
  const double scale = length / static_cast<double>(outputs);
  const double widen = std::max(scale, 1.0);
  std::vector<Taps> taps(static_cast<size_t>(outputs));
  for (int64_t o = 0; o < outputs; ++o) {
    const double centre = start + (static_cast<double>(o) + 0.5) * scale;
    const int first = std::max(static_cast<int>(std::floor(centre - widen + 0.5)), lo);
    const int end = std::min(static_cast<int>(std::floor(centre + widen + 0.5)), hi);
    Taps& t = taps[static_cast<size_t>(o)];
    double sum = 0;
    for (int k = first; k < end; ++k) {
      const double w = std::max(0.0, 1.0 - std::abs((k + 0.5 - centre) / widen));
      t.weights.push_back(static_cast<float>(w));
      sum += w;
    }
    if (sum > 0) {
      t.first = first;
      for (float& w : t.weights) w = static_cast<float>(w / sum);
    } else {  // a centre outside what may be read: its nearest readable pixel
      t.first = std::clamp(static_cast<int>(std::floor(centre)), lo, hi - 1);
      t.weights.assign(1, 1.0f);
    }
  }
  return taps;
}

}  // namespace

ResampleWindow box_window(int x0, int y0, int width, int height) {
  return {static_cast<double>(x0), static_cast<double>(y0), static_cast<double>(width), static_cast<double>(height),
          x0, y0, x0 + width, y0 + height};
}

ResampleWindow random_resized_crop(int width, int height, uint64_t key) {
  const double area = static_cast<double>(width) * height;
  const double log_low = std::log(3.0 / 4), log_high = std::log(4.0 / 3);
  for (uint64_t attempt = 0; attempt < 10; ++attempt) {
    const double target = area * (0.08 + 0.92 * random_unit(key, 4 * attempt));
    const double ratio = std::exp(log_low + (log_high - log_low) * random_unit(key, 4 * attempt + 1));
    const int w = static_cast<int>(std::nearbyint(std::sqrt(target * ratio)));
    const int h = static_cast<int>(std::nearbyint(std::sqrt(target / ratio)));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      // Uniform over the w x h boxes inside the image, as randint(0, W - w + 1).
      const int x0 = std::min(static_cast<int>(random_unit(key, 4 * attempt + 2) * (width - w + 1)), width - w);
      const int y0 = std::min(static_cast<int>(random_unit(key, 4 * attempt + 3) * (height - h + 1)), height - h);
      return box_window(x0, y0, w, h);
    }
  }
  int w = width, h = height;
  if (static_cast<double>(width) / height < 3.0 / 4) h = static_cast<int>(std::nearbyint(w / (3.0 / 4)));
  if (static_cast<double>(width) / height > 4.0 / 3) w = static_cast<int>(std::nearbyint(h * (4.0 / 3)));
  w = std::min(w, width), h = std::min(h, height);
  return box_window((width - w) / 2, (height - h) / 2, w, h);
}

ResampleWindow center_crop(int width, int height, int64_t size) {
  const int64_t short_side = size * 256 / 224;
  const bool wide = width >= height;
  const int64_t long_side = short_side * (wide ? width : height) / (wide ? height : width);
  const int64_t resized_w = wide ? long_side : short_side, resized_h = wide ? short_side : long_side;
  const double left = std::nearbyint(static_cast<double>(resized_w - size) / 2.0);
  const double top = std::nearbyint(static_cast<double>(resized_h - size) / 2.0);
  // The resize maps the whole image onto resized_w x resized_h, each axis by its own scale.
  const double sx = static_cast<double>(width) / static_cast<double>(resized_w);
  const double sy = static_cast<double>(height) / static_cast<double>(resized_h);
  return {left * sx, top * sy, static_cast<double>(size) * sx, static_cast<double>(size) * sy, 0, 0, width, height};
}

void resample(const RgbImage& image, const ResampleWindow& window, int64_t size, bool flip, float* out) {
  const std::vector<Taps> across = axis_taps(window.x0, window.width, size, window.read_x0, window.read_x1);
  const std::vector<Taps> down = axis_taps(window.y0, window.height, size, window.read_y0, window.read_y1);
  // The rows the vertical taps read, resampled across first: rows x size x 3.
  int row_lo = down.front().first, row_hi = row_lo;
  for (const Taps& t : down) {
    row_lo = std::min(row_lo, t.first);
    row_hi = std::max(row_hi, t.first + static_cast<int>(t.weights.size()));
  }
  std::vector<float> rows(static_cast<size_t>(row_hi - row_lo) * static_cast<size_t>(size) * 3);
  for (int y = row_lo; y < row_hi; ++y) {
    const uint8_t* source = image.pixels.data() + static_cast<size_t>(y) * static_cast<size_t>(image.width) * 3;
    float* row = rows.data() + static_cast<size_t>(y - row_lo) * static_cast<size_t>(size) * 3;
    for (int64_t x = 0; x < size; ++x) {
      const Taps& t = across[static_cast<size_t>(x)];
      float sum[3] = {0, 0, 0};
      for (size_t k = 0; k < t.weights.size(); ++k)
        for (int c = 0; c < 3; ++c) sum[c] += t.weights[k] * source[(static_cast<size_t>(t.first) + k) * 3 + c];
      for (int c = 0; c < 3; ++c) row[x * 3 + c] = sum[c];
    }
  }
  const int64_t plane = size * size;
  for (int64_t y = 0; y < size; ++y) {
    const Taps& t = down[static_cast<size_t>(y)];
    for (int64_t x = 0; x < size; ++x) {
      const int64_t ox = flip ? size - 1 - x : x;
      for (int c = 0; c < 3; ++c) {
        float sum = 0;
        for (size_t k = 0; k < t.weights.size(); ++k)
          sum += t.weights[k] * rows[((static_cast<size_t>(t.first - row_lo) + k) * static_cast<size_t>(size) + static_cast<size_t>(x)) * 3 + c];
        out[c * plane + y * size + ox] = sum;
      }
    }
  }
}

}  // namespace sb::models
