#pragma once
// The cycle loops' wait between steps (gradient_exchange.hpp's planned loop, cycle_exchange.hpp's
// live one): the training thread counts the steps it begins under `mutex`; the loop's thread
// serves each once.
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace sb {

// Waits until the exchange is stopping (false) or a step past `steps_served` has begun (true, and
// steps_served is now that step). `stopping` and `steps_begun` are guarded by `mutex`.
inline bool wait_for_next_step(std::mutex& mutex, std::condition_variable& changed, const bool& stopping,
                               const uint64_t& steps_begun, uint64_t& steps_served) {
  std::unique_lock lock(mutex);
  changed.wait(lock, [&] { return stopping || steps_begun > steps_served; });
  if (stopping) return false;
  steps_served = steps_begun;
  return true;
}

}  // namespace sb
