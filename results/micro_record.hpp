#pragma once
// sb-micro's results: one row per Google Benchmark run, and their `/micro` group as
// results/SCHEMA.md describes it.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "results/h5.hpp"

namespace sb {

// One benchmark run as Google Benchmark reports it (an aggregate of repetitions is a row too).
struct MicroRow {
  std::string name;         // as printed, e.g. BM_memcpy/262144/real_time, BM_topk/.../real_time_median
  std::string error;        // why the benchmark was skipped (no GPU, ...); "" when it ran
  int64_t iterations = 0;
  double real_time_us = 0;  // per iteration
  double cpu_time_us = 0;   // per iteration, this thread
  double traffic_GBps = -1;  // bytes read + written per second (10^9), -1 when the benchmark sets none
  std::map<std::string, double> counters;  // x_memcpy, x_nth_element, x_topk, ...
};

// Writes /micro: the rows' names and errors as attributes, one dataset per column, and one per
// counter any row has (NaN in the rows without it).
void write_micro_results(const h5::Node& root, const std::vector<MicroRow>& rows);

}  // namespace sb
