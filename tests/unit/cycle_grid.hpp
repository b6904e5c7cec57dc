#pragma once
// The cycle strategy's buckets on a grid of ticks: Horovod's loop run by the simulator
// (predict_cycle_step) at one rank, where a cycle costs nothing, so that every cycle starts on its
// tick, cycle_s after the last, and takes the gradients ready by then (one ready on a tick is
// that tick's). What the unit tests fuse cycle by cycle to check fuse_cycle, and the reference the
// step model's costly cycles are compared with; and the tensors of a plan's buckets.
#include <algorithm>
#include <vector>

#include "collectives/buckets/backward_profile.hpp"
#include "sim/machine.hpp"
#include "sim/step_model.hpp"

namespace sb {

// Which tensors each bucket holds, in order.
inline std::vector<std::vector<size_t>> tensors_of(const BucketPlan& plan) {
  std::vector<std::vector<size_t>> buckets;
  for (const Bucket& b : plan.buckets) {
    buckets.emplace_back();
    for (const BucketPiece& piece : b.pieces) buckets.back().push_back(piece.tensor);
  }
  return buckets;
}

// ready_s[k]: when tensor k's gradient is handed over, seconds after backward starts.
inline sim::CyclePrediction cycle_grid(const std::vector<GradientTensor>& tensors, const std::vector<double>& ready_s,
                                       double cycle_s, double threshold_mb) {
  // The machine's figures do not matter: one rank prices nothing.
  static const sim::Machine machine = sim::parse_machine(
      "name one-rank\nlevel net size 0 alpha 1us bandwidth 1GB/s\ngamma float 1GB/s\ncopy 1GB/s\n", "one-rank");
  sim::AllreduceCase one_rank;
  one_rank.impl = "mpi";
  one_rank.nranks = 1;
  sim::StepModel model(machine, one_rank);
  BackwardProfile profile;
  profile.tensors = tensors;
  profile.ready_s = ready_s;
  profile.backward_s = ready_s.empty() ? 0.0 : *std::max_element(ready_s.begin(), ready_s.end());
  return sim::predict_cycle_step(profile, cycle_s, threshold_mb, model);
}

}  // namespace sb
