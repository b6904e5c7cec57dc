#pragma once
// The symbolic verifier: runs the schedules of all ranks together without data or MPI, tracking
// for every element range of every buffer which ranks' contributions it holds, and proves that
// every rank ends with every rank's contribution exactly once. Also checks that every send has
// its matching receive (same round, same order, same count), that chunks stay inside their
// buffers, that no step reads scratch that was never written, and that no round receives by copy
// into a range it is sending. Up to kMaxVerifiedRanks ranks.
#include <cstddef>
#include <string>
#include <vector>

#include "collectives/schedule.hpp"

namespace sb {

inline constexpr size_t kMaxVerifiedRanks = 1024;

// Empty when the schedules (one per rank, by rank) make a correct allreduce; otherwise the
// first problem found, naming the rank, round and step.
std::string verify_allreduce(const std::vector<Schedule>& schedules);

}  // namespace sb
