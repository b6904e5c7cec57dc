#pragma once
// The allreduce algorithms, each a pure function from (rank, nranks, count) to that rank's
// schedule, correct for every nranks >= 1 and every count (remainders, count < nranks).
#include <cstddef>
#include <string_view>
#include <vector>

#include "collectives/schedule.hpp"

namespace sb {

struct AllreduceAlgorithm {
  std::string_view name;
  std::string_view description;
  Schedule (*build)(int rank, int nranks, size_t count);
};

Schedule ring_allreduce(int rank, int nranks, size_t count);
Schedule recursive_doubling_allreduce(int rank, int nranks, size_t count);
Schedule rabenseifner_allreduce(int rank, int nranks, size_t count);

const std::vector<AllreduceAlgorithm>& allreduce_algorithms();

// The usual fold of a non-power-of-two rank count onto the largest power of two below it: of the
// first 2*rem ranks, each even rank hands its data to the odd rank above it and sits out; the
// pow2 ranks left are renumbered 0..pow2-1. fold_in/fold_out add the rounds before and after.
struct Fold {
  int pow2 = 1;      // largest power of two <= nranks
  int rem = 0;       // nranks - pow2
  int newrank = -1;  // rank among the pow2, or -1 for a rank that sits out
  int real_rank(int folded) const { return folded < rem ? 2 * folded + 1 : folded + rem; }
};
Fold fold_for(int rank, int nranks);
void fold_in(Schedule& schedule, const Fold& fold);
void fold_out(Schedule& schedule, const Fold& fold);

}  // namespace sb
