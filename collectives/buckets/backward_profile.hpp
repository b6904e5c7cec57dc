#pragma once
// When backward produces each gradient: the timeline the bucket benchmark replays. Measured from
// a model on a backend (models/backward_timing.hpp), or read from a text file so that a profile of
// another machine (a GPU's backward, say) can be replayed here:
//
//   # comment
//   backward 0.412                 total backward time, seconds
//   forward 0.205                  forward time, seconds (optional; sb-dryrun's training steps)
//   fc.bias 0.0021 1000            tensor name, seconds after backward starts, fp32 elements
//   ...                            one line per tensor, in the model's (forward) order
#include <string>
#include <vector>

#include "collectives/buckets/bucket_plan.hpp"

namespace sb {

struct BackwardProfile {
  double backward_s = 0;
  double forward_s = 0;                 // 0: not known
  std::vector<GradientTensor> tensors;  // forward order
  std::vector<double> ready_s;          // per tensor, seconds after backward starts
};

// Throws UsageError naming the file and line for anything malformed.
BackwardProfile read_backward_profile(const std::string& path);
// The same from the file's text (read elsewhere: rank 0's copy, sent to every rank).
BackwardProfile parse_backward_profile(const std::string& text, const std::string& path);
void write_backward_profile(const std::string& path, const BackwardProfile& profile);

}  // namespace sb
