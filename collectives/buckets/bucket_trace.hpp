#pragma once
// The gradient exchange's part of a Chrome trace (common/trace_events.hpp), shared by sb-train's
// --trace and sb-buckets': a bar per bucket's reduction on the given row, from its start to its
// end, named "bucket B" and carrying its bytes, its number of pieces and its first and last
// tensors' names, so that the trace shows which layers' gradients each allreduce carried.
#include <utility>
#include <vector>

#include "collectives/buckets/bucket_plan.hpp"
#include "common/trace_events.hpp"

namespace sb {

// spans: each bucket's (start, end) in MPI_Wtime seconds, in the plan's order (GradientExchange::
// bucket_spans()). A bucket the plan does not hold is left out.
void trace_bucket_spans(TraceRecorder& trace, int track, const BucketPlan& plan,
                        const std::vector<std::pair<double, double>>& spans);

}  // namespace sb
