// The loader's crops and resampling against torchvision's on PIL images
// (tests/unit/torchvision_crop_values.inc, written by tests/reference/torchvision-crops): the
// evaluation transform (Resize + CenterCrop) on a wide and a tall image, a crop box shrunk (with
// and without flip) and one grown; and RandomResizedCrop's boxes staying within its bounds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <sstream>
#include <vector>

#include "kernels/random.hpp"
#include "models/data/resample.hpp"

namespace sb::models {
namespace {

struct CropReference {
  const char* name;
  int width, height, seed;
  bool center;
  int size, box_x0, box_y0, box_width, box_height;
  bool flip;
  const char* levels;  // CHW, 0..255, space-separated
};
#include "tests/unit/torchvision_crop_values.inc"

// The generator's noise image: the top 8 bits of SplitMix64 (mix64) of 2^32 seed + (y width + x) 3 + c.
RgbImage noise(int width, int height, uint64_t seed) {
  RgbImage image{width, height, std::vector<uint8_t>(static_cast<size_t>(width) * height * 3)};
  for (size_t i = 0; i < image.pixels.size(); ++i) {
    image.pixels[i] = static_cast<uint8_t>(mix64(i + (seed << 32)) >> 56);
  }
  return image;
}

// A flip for some windows and not others, so both ways are read.
bool flip_some(const ResampleWindow& window) { return window.read_x0 % 2 == 1; }

TEST(Resample, CropsMatchTorchvisionsOnPilImages) {
  for (const CropReference& r : kCropReferences) {
    const RgbImage image = noise(r.width, r.height, static_cast<uint64_t>(r.seed));
    const ResampleWindow window = r.center ? center_crop(r.width, r.height, r.size)
                                           : box_window(r.box_x0, r.box_y0, r.box_width, r.box_height);
    std::vector<float> ours(static_cast<size_t>(3 * r.size * r.size));
    resample(image, window, r.size, r.flip, ours.data());
    std::istringstream levels(r.levels);
    std::vector<double> theirs;
    for (double v; levels >> v;) theirs.push_back(v);
    ASSERT_EQ(theirs.size(), ours.size()) << r.name;
    double worst = 0, sum = 0;
    for (size_t i = 0; i < ours.size(); ++i) {
      const double difference = std::abs(ours[i] - theirs[i]);
      worst = std::max(worst, difference);
      sum += difference;
    }
    // PIL rounds to 8 bits after each of its two passes; ours stays in float: within a level,
    // half a level on average. Sampling without the widened filter (the loader before) was 20 to 30
    // levels off on average on these, 118 at worst; the grown box is the same either way.
    EXPECT_LE(worst, 1.0 + 1e-4) << r.name;
    EXPECT_LT(sum / static_cast<double>(ours.size()), 0.5) << r.name;
    std::printf("[ pil      ] %-16s worst %.2f levels, mean %.3f\n", r.name, worst, sum / static_cast<double>(ours.size()));
  }
}

TEST(Resample, RandomResizedCropsStayInTheImageAndItsBounds) {
  for (const auto& [width, height] : {std::pair{500, 375}, std::pair{100, 400}, std::pair{28, 28}}) {
    double area_sum = 0;
    const int draws = 2000;
    for (uint64_t key = 1; key <= static_cast<uint64_t>(draws); ++key) {
      const ResampleWindow w = random_resized_crop(width, height, key * 0x9E3779B97F4A7C15ull);
      ASSERT_TRUE(w.read_x0 >= 0 && w.read_y0 >= 0 && w.read_x1 <= width && w.read_y1 <= height) << width << "x" << height;
      ASSERT_TRUE(w.read_x1 > w.read_x0 && w.read_y1 > w.read_y0);
      // The box is what is read: integer, cut first.
      ASSERT_EQ(w.x0, w.read_x0);
      ASSERT_EQ(w.width, w.read_x1 - w.read_x0);
      const double fraction = w.width * w.height / (static_cast<double>(width) * height);
      const double ratio = w.width / w.height;
      // Rounding the sides to pixels moves the area and the ratio a little off their ranges.
      const double slack = 2.0 / std::min(w.width, w.height);
      ASSERT_GE(fraction, 0.08 * (1 - slack)) << width << "x" << height;
      ASSERT_LE(fraction, 1.0);
      ASSERT_GE(ratio, 0.75 * (1 - slack));
      ASSERT_LE(ratio, 4.0 / 3 * (1 + slack));
      area_sum += fraction;
    }
    // On a 4:3 image: larger boxes fit fewer of the ratios drawn and are drawn again, so the mean
    // area is under the 0.54 of a uniform [0.08, 1], but most draws fit at once.
    const double mean = area_sum / draws;
    if (width == 500) {
      EXPECT_TRUE(mean > 0.3 && mean < 0.54) << "mean area fraction " << mean;
    }
  }
}

TEST(Resample, TinyAndExtremeImagesStayWithinTheirPixels) {
  // Every output a weighted mean of pixels that exist (the sanitizer builds see any other read).
  for (const auto& [width, height] : {std::pair{1, 1}, std::pair{1, 300}, std::pair{300, 1}, std::pair{4000, 2}}) {
    const RgbImage image = noise(width, height, 3);
    std::vector<float> out(3 * 224 * 224);
    std::vector<ResampleWindow> windows = {center_crop(width, height, 224)};
    for (uint64_t key = 1; key <= 20; ++key) windows.push_back(random_resized_crop(width, height, key * 7919));
    for (const ResampleWindow& window : windows) {
      resample(image, window, 224, flip_some(window), out.data());
      for (float v : out) ASSERT_TRUE(v >= -1e-3f && v <= 255.001f) << width << "x" << height << ": " << v;
    }
  }
}

TEST(Resample, ShrinkingAveragesInsteadOfSampling) {
  // 1-pixel black and white columns shrunk 3x. Sampling the two pixels nearest each output
  // centre (3 o + 1 exactly) gives black and white stripes again; the triangle filter 3 pixels
  // wide each side averages 6 columns, 5/9 or 4/9 of them white: 141.7 and 113.3.
  RgbImage stripes{48, 48, std::vector<uint8_t>(48 * 48 * 3)};
  for (int y = 0; y < 48; ++y)
    for (int x = 0; x < 48; ++x)
      for (int c = 0; c < 3; ++c) stripes.pixels[(y * 48 + x) * 3 + c] = x % 2 ? 255 : 0;
  std::vector<float> out(3 * 16 * 16);
  resample(stripes, box_window(0, 0, 48, 48), 16, false, out.data());
  // (The edge columns' filters lose their outer taps and renormalise: left out here.)
  for (int x = 1; x < 15; ++x) EXPECT_NEAR(out[5 * 16 + x], x % 2 ? 255.0 * 4 / 9 : 255.0 * 5 / 9, 1e-3) << x;
}

}  // namespace
}  // namespace sb::models
