#include "models/data/jpeg.hpp"

#include <turbojpeg.h>

#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>

namespace sb::models {
namespace {

struct HandleCloser {
  void operator()(void* handle) const { tjDestroy(handle); }
};
using TjHandle = std::unique_ptr<void, HandleCloser>;

// A decoder per thread. A damaged file can leave TurboJPEG 2.1's decoder unusable: after "Bogus
// Huffman table definition" in a header, every later header read on that handle fails the same
// way, so one bad image would cost all the thread's images after it. A failed decode therefore
// replaces the thread's decoder (forget_decompressor).
thread_local TjHandle thread_decompressor;

tjhandle decompressor() {
  if (!thread_decompressor) thread_decompressor.reset(tjInitDecompress());
  return thread_decompressor.get();
}

void forget_decompressor() { thread_decompressor.reset(); }

tjhandle compressor() {
  thread_local TjHandle handle(tjInitCompress());
  return handle.get();
}

}  // namespace

bool decode_jpeg(const std::vector<uint8_t>& bytes, RgbImage& out) {
  tjhandle handle = decompressor();
  if (!handle || bytes.empty()) return false;
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(handle, bytes.data(), bytes.size(), &width, &height, &subsampling, &colorspace) != 0) {
    forget_decompressor();
    return false;
  }
  if (width <= 0 || height <= 0 || static_cast<int64_t>(width) * height > (int64_t{1} << 28)) return false;
  out.width = width;
  out.height = height;
  out.pixels.resize(static_cast<size_t>(width) * height * 3);
  if (tjDecompress2(handle, bytes.data(), bytes.size(), out.pixels.data(), width, 0, height, TJPF_RGB,
                    TJFLAG_STOPONWARNING | TJFLAG_ACCURATEDCT) != 0) {
    forget_decompressor();
    return false;
  }
  return true;
}

std::vector<uint8_t> encode_jpeg(const uint8_t* pixels, int width, int height, int channels, int quality) {
  tjhandle handle = compressor();
  if (!handle) throw std::runtime_error("cannot start a JPEG encoder");
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  const bool gray = channels == 1;
  if (tjCompress2(handle, pixels, width, 0, height, gray ? TJPF_GRAY : TJPF_RGB, &buffer, &size,
                  gray ? TJSAMP_GRAY : TJSAMP_444, quality, TJFLAG_ACCURATEDCT) != 0) {
    const std::string why = tjGetErrorStr2(handle);
    tjFree(buffer);
    throw std::runtime_error("JPEG encoding failed: " + why);
  }
  std::vector<uint8_t> out(buffer, buffer + size);
  tjFree(buffer);
  return out;
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace sb::models
