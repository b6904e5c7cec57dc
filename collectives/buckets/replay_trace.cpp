#include "collectives/buckets/replay_trace.hpp"

#include <utility>
#include <vector>

#include "collectives/buckets/bucket_trace.hpp"

namespace sb {

void trace_replayed_step(TraceRecorder& trace, const std::string& configuration, const std::string& args_json,
                         const BackwardProfile& profile, const ReplayResult& step) {
  const double start = step.start_wtime;
  const double backward_end = start + profile.backward_s;
  const double end = start + step.iteration_s;
  trace.span_wtime(kReplayComputeTrack, configuration, "step", start, end, args_json);
  trace.span_wtime(kReplayComputeTrack, "backward (replayed)", "step", start, backward_end);
  if (end > backward_end)
    trace.span_wtime(kReplayComputeTrack, "waiting for the gradient exchange", "step", backward_end, end);
  for (size_t k = 0; k < step.ready_s.size() && k < profile.tensors.size(); ++k)
    trace.instant_wtime(kReplayComputeTrack, profile.tensors[k].name, "gradient ready", start + step.ready_s[k]);
  std::vector<std::pair<double, double>> spans;
  for (size_t b = 0; b < step.bucket_start_s.size() && b < step.bucket_end_s.size(); ++b)
    spans.emplace_back(start + step.bucket_start_s[b], start + step.bucket_end_s[b]);
  trace_bucket_spans(trace, kReplayCommunicationTrack, step.plan, spans);
}

}  // namespace sb
