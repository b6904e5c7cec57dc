#include "models/tensor.hpp"

namespace sb::models {

std::string Shape::str() const {
  return std::to_string(n) + "x" + std::to_string(c) + "x" + std::to_string(h) + "x" + std::to_string(w);
}

}  // namespace sb::models
