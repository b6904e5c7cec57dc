#pragma once
// JPEG through libjpeg-turbo's TurboJPEG API: decode a file's bytes to 8-bit RGB, encode 8-bit
// grayscale or RGB. Handles are per thread, so loader workers decode in parallel.
#include <cstdint>
#include <string>
#include <vector>

namespace sb::models {

struct RgbImage {
  int width = 0, height = 0;
  std::vector<uint8_t> pixels;  // height x width x 3
};

// False for anything that is not a whole, valid JPEG (a warning such as a premature end of
// data counts as a failure: a half-decoded image is not a training sample).
bool decode_jpeg(const std::vector<uint8_t>& bytes, RgbImage& out);

// channels 1 (grayscale) or 3 (RGB); quality 1..100. Throws std::runtime_error on failure.
std::vector<uint8_t> encode_jpeg(const uint8_t* pixels, int width, int height, int channels, int quality);

// The whole file, or an empty vector when it cannot be read.
std::vector<uint8_t> read_file(const std::string& path);

}  // namespace sb::models
