#pragma once
// A cycle's negotiation in Horovod's loop: which gradients every rank has ready, agreed as a bit
// per tensor allreduced with MPI_BAND (its response cache's way, every cycle, idle or not), as
// cycle_exchange.hpp's loop does once a cycle.
#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace sb {

class ReadyNegotiation {
 public:
  // words: negotiation_words(plan), a bit per tensor of the plan.
  explicit ReadyNegotiation(size_t words) : mine_(words), everywhere_(words) {}

  // This rank's marks for the next agree(): none, then each tensor ready here.
  void clear() { std::fill(mine_.begin(), mine_.end(), 0); }
  void mark(size_t tensor) { mine_[tensor / 64] |= uint64_t{1} << (tensor % 64); }
  // Collective over comm (of `ranks`; one rank agrees with itself without MPI): afterwards
  // everywhere(k) says whether every rank had marked k. Returns the seconds it took.
  double agree(MPI_Comm comm, int ranks);
  bool everywhere(size_t tensor) const { return (everywhere_[tensor / 64] >> (tensor % 64) & 1) != 0; }

 private:
  std::vector<uint64_t> mine_, everywhere_;
};

}  // namespace sb
