#pragma once
// The geometry and resampling of a training or evaluation image, as torchvision does them on PIL
// images: RandomResizedCrop's integer crop box, Resize + CenterCrop's window, and PIL's bilinear
// resize, whose triangle filter widens by the shrink factor (antialiasing) so that shrinking
// averages every source pixel under an output pixel rather than sampling the nearest two.
#include <cstdint>

#include "models/data/jpeg.hpp"

namespace sb::models {

// What one size x size output samples: the source region that maps onto it (in source pixels,
// fractional), and the source pixels its filter may read ([read_x0, read_x1) x [read_y0, read_y1):
// the crop box where the crop is cut first, the whole image where the image is resized first).
struct ResampleWindow {
  double x0, y0, width, height;
  int read_x0, read_y0, read_x1, read_y1;
};

// The integer box [x0, x0 + width) x [y0, y0 + height), cut first and then resized (torchvision's
// resized_crop), so that its filter reads the box's pixels only.
ResampleWindow box_window(int x0, int y0, int width, int height);

// torchvision's RandomResizedCrop (scale 0.08..1, ratio 3/4..4/3, 10 tries, then the central crop
// at the nearest allowed ratio): an integer box, cut first and then resized. Its random draws are
// random_unit(key, 0..39), so a key gives one crop.
ResampleWindow random_resized_crop(int width, int height, uint64_t key);

// torchvision's evaluation transform for a size x size input: Resize of the short side to
// size x 256 / 224 (256 for 224; the long side truncated, as torchvision does), then CenterCrop,
// its offsets rounded half to even (Python's round).
ResampleWindow center_crop(int width, int height, int64_t size);

// The window resampled to size x size by PIL's bilinear filter, as CHW floats in 8-bit levels
// (0..255, unrounded), mirrored left to right when flip.
void resample(const RgbImage& image, const ResampleWindow& window, int64_t size, bool flip, float* out);

}  // namespace sb::models
