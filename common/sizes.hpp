#pragma once
// Byte sizes as people type them (8, 64K, 1M, 2G) and as tables print them.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sb {

// Bytes in a MiB, for the figures bucket sizes and payloads are given and printed in.
inline constexpr double kBytesPerMiB = 1024.0 * 1024.0;

// Parses a non-negative size with an optional K/M/G/T suffix (powers of 1024, case-insensitive,
// an optional trailing B). Throws UsageError naming `what` on anything else.
uint64_t parse_size(std::string_view text, std::string_view what);

// 1024 -> "1K", 3145728 -> "3M", 1000 -> "1000": exact binary suffixes only.
std::string format_size(uint64_t bytes);

// The sizes of an nccl-tests style sweep: from min to max, multiplying by `factor` when it is
// > 0, otherwise adding `step`. Both ends inclusive (max itself is not added when the steps
// jump over it, as in nccl-tests). More than kMostSweepSizes throws UsageError: each size is a
// measurement, and -b 8 -e 8G -i 1 had built a list of a billion sizes, 8 GB, before the first.
inline constexpr size_t kMostSweepSizes = 10000;
std::vector<uint64_t> size_sweep(uint64_t min_bytes, uint64_t max_bytes, uint64_t factor,
                                 uint64_t step);

}  // namespace sb
