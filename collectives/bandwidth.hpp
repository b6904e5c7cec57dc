#pragma once
// Bandwidths as nccl-tests defines them. algbw is bytes / time. busbw scales algbw by the
// fraction of the data every rank must send and receive in an optimal algorithm, so that it can
// be compared with the link's peak whatever the rank count: 2(p-1)/p for allreduce.
#include <cstdint>

namespace sb {

inline double algbw_GBps(uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0.0;
}

inline double allreduce_busbw_factor(int nranks) {
  return nranks > 0 ? 2.0 * (nranks - 1) / nranks : 0.0;
}

}  // namespace sb
