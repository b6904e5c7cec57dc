#include "collectives/buckets/bucket_trace.hpp"

#include <string>

#include "common/json_text.hpp"

namespace sb {

void trace_bucket_spans(TraceRecorder& trace, int track, const BucketPlan& plan,
                        const std::vector<std::pair<double, double>>& spans) {
  for (size_t b = 0; b < spans.size() && b < plan.buckets.size(); ++b) {
    const Bucket& bucket = plan.buckets[b];
    const std::string& first = plan.tensors[bucket.pieces.front().tensor].name;
    const std::string& last = plan.tensors[bucket.pieces.back().tensor].name;
    const std::string args = "\"bytes\":" + std::to_string(bucket.count * sizeof(float)) + ",\"pieces\":" +
                             std::to_string(bucket.pieces.size()) + ",\"first\":" + json_string(first) +
                             ",\"last\":" + json_string(last);
    trace.span_wtime(track, "bucket " + std::to_string(b), "allreduce", spans[b].first, spans[b].second, args);
  }
}

}  // namespace sb
