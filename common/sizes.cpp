#include "common/sizes.hpp"

#include <cctype>
#include <charconv>
#include <limits>

#include "common/usage_error.hpp"

namespace sb {

uint64_t parse_size(std::string_view text, std::string_view what) {
  auto bad = [&](const char* why) {
    return UsageError(std::string(what) + ": '" + std::string(text) + "' " + why);
  };
  if (text.empty()) throw bad("is empty");
  if (text.front() == '-') throw bad("is negative");
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range) throw bad("is too large");
  if (ec != std::errc() || end == text.data()) throw bad("is not a size (use e.g. 8, 64K, 1M, 2G)");
  std::string_view suffix(end, text.data() + text.size() - end);
  if (!suffix.empty() && suffix.front() == '.') throw bad("is not a whole number (sizes and factors are integers: 1536, 2)");
  if (!suffix.empty() && (suffix.back() == 'B' || suffix.back() == 'b')) suffix.remove_suffix(1);
  unsigned shift = 0;
  if (suffix.size() == 1) {
    switch (std::toupper(static_cast<unsigned char>(suffix.front()))) {
      case 'K': shift = 10; break;
      case 'M': shift = 20; break;
      case 'G': shift = 30; break;
      case 'T': shift = 40; break;
      default: throw bad("has an unknown suffix (use K, M, G or T)");
    }
  } else if (!suffix.empty()) {
    throw bad("has an unknown suffix (use K, M, G or T)");
  }
  if (shift && value > (std::numeric_limits<uint64_t>::max() >> shift)) throw bad("is too large");
  return value << shift;
}

std::string format_size(uint64_t bytes) {
  static constexpr const char* kSuffix[] = {"", "K", "M", "G", "T"};
  int i = 0;
  while (i < 4 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++i;
  }
  return std::to_string(bytes) + kSuffix[i];
}

std::vector<uint64_t> size_sweep(uint64_t min_bytes, uint64_t max_bytes, uint64_t factor,
                                 uint64_t step) {
  std::vector<uint64_t> sizes;
  for (uint64_t size = min_bytes; size <= max_bytes;) {
    if (sizes.size() == kMostSweepSizes)
      throw UsageError("the sizes from " + format_size(min_bytes) + " to " + format_size(max_bytes) + " by " +
                       (factor > 0 ? "x" + std::to_string(factor) : "+" + format_size(step)) + " number more than " +
                       std::to_string(kMostSweepSizes) + ": raise the step (-i) or grow by a factor (-f)");
    sizes.push_back(size);
    uint64_t next = factor > 0 ? size * factor : size + step;
    if (next <= size) break;  // overflow, or a step of zero: never loop forever
    size = next;
  }
  return sizes;
}

}  // namespace sb
