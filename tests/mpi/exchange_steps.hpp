#pragma once
// What the gradient exchanges' MPI tests share: gradients standing in for a model's, and one step
// through an exchange that checks every rank ends with the exact average.
#include <mpi.h>

#include <vector>

#include "collectives/buckets/gradient_averager.hpp"

namespace sb {

// One fp32 buffer per tensor, standing in for a model's gradients.
struct Gradients {
  explicit Gradients(const std::vector<GradientTensor>& tensors) {
    for (const GradientTensor& t : tensors) values.emplace_back(t.count);
    for (auto& v : values) pointers.push_back(v.data());
  }
  std::vector<std::vector<float>> values;
  std::vector<float*> pointers;
};

// Rank r's element i of tensor k is ranks * (r + 1) * pattern(k + i + step), so the average over
// ranks is rank_sum * pattern(...), exactly; one step through the exchange, reporting tensors in
// backward order; returns how many elements are not that average. With `weighted`, rank r's
// values are ranks * pattern and the exchange is to weigh them r + 1 times: the same average.
template <class Pattern>
size_t wrong_after_step(GradientAverager& exchange, Gradients& g, int step, Pattern pattern, bool weighted = false) {
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const int factor = weighted ? 1 : rank + 1;
  for (size_t k = 0; k < g.values.size(); ++k)
    for (size_t i = 0; i < g.values[k].size(); ++i)
      g.values[k][i] = static_cast<float>(nranks * factor * pattern(k + i + step));
  exchange.begin_step();
  for (size_t k = g.values.size(); k-- > 0;) exchange.tensor_ready(k);
  exchange.finish();
  const int rank_sum = nranks * (nranks + 1) / 2;
  size_t wrong = 0;
  for (size_t k = 0; k < g.values.size(); ++k)
    for (size_t i = 0; i < g.values[k].size(); ++i)
      wrong += g.values[k][i] != static_cast<float>(rank_sum * pattern(k + i + step));
  return wrong;
}

}  // namespace sb
