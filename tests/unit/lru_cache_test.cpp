// The LRU cache the oneDNN backend keeps its primitives in: values built once, the least recently
// used dropped past the capacity and built again when asked for again; and the backend itself,
// which stays within its bound over more shapes than it keeps and computes a dropped shape's
// convolution as before.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "models/lru_cache.hpp"
#include "models/onednn_backend.hpp"

namespace sb::models {
namespace {

TEST(LruCache, DropsTheLeastRecentlyUsedPastItsCapacity) {
  LruCache cache(3);
  int built = 0;
  auto get = [&](const std::string& key) {
    return cache.get<std::string>(key, [&] {
      ++built;
      return std::make_shared<std::string>("value of " + key);
    });
  };
  EXPECT_EQ(get("a"), "value of a");
  get("b");
  get("c");
  EXPECT_EQ(built, 3);
  EXPECT_EQ(get("a"), "value of a");  // kept, and now the most recent
  EXPECT_EQ(built, 3);
  get("d");  // drops b, the least recently used
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(cache.evictions(), 1u);
  get("a");
  get("c");
  get("d");
  EXPECT_EQ(built, 4) << "a, c and d are kept";
  EXPECT_EQ(get("b"), "value of b");  // built again, dropping a
  EXPECT_EQ(built, 5);
  get("a");
  EXPECT_EQ(built, 6);
  EXPECT_THROW(LruCache(0), std::invalid_argument);
}

TEST(LruCache, TheOnednnBackendKeepsItsBoundAndRebuildsWhatItDropped) {
  OnednnBackend backend(1);
  Tensor w = backend.allocate({2, 1, 3, 3});
  backend.write(w, std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9, -1, 0, 1, -2, 0, 2, -1, 0, 1});
  const ConvGeometry g{1, 1};
  // One convolution shape per batch size, more of them than the backend keeps.
  auto convolve = [&](int64_t batch) {
    Tensor x = backend.allocate({batch, 1, 4, 4});
    std::vector<float> values(static_cast<size_t>(x.count()));
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 7) - 3.0f;
    backend.write(x, values);
    Tensor y = backend.allocate({batch, 2, 4, 4});
    backend.conv_forward(x, w, y, g);
    return read_all(backend, y);
  };
  const std::vector<float> first = convolve(1);
  const int64_t shapes = OnednnBackend::kPrimitivesKept + 20;
  for (int64_t batch = 2; batch <= shapes; ++batch) convolve(batch);
  EXPECT_EQ(backend.cached_primitives(), OnednnBackend::kPrimitivesKept);
  EXPECT_EQ(convolve(1), first) << "the dropped shape's convolution, built again, gives what it gave";
}

}  // namespace
}  // namespace sb::models
