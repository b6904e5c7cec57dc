#pragma once
// What the oneDNN backend's files share about its tensors: fp32 host arrays (channels-last).
#include <string>

#include "common/check.hpp"
#include "models/tensor.hpp"

namespace sb::models::onednn {

inline float* f(const Tensor& t) { return t.as<float>(); }

inline void require_same(const Tensor& a, const Tensor& b, const char* what) {
  SB_CHECK(a.shape() == b.shape(), std::string(what) + ": " + a.shape().str() + " vs " + b.shape().str());
}

}  // namespace sb::models::onednn
