#pragma once
// sb-buckets' --trace: one replayed step per configuration measured (a strategy at a bucket size,
// or a baseline), the one whose figures its row reports, in the Chrome trace format
// (common/trace_events.hpp). Row "compute" holds the step, named for its configuration and
// carrying its figures, the replayed backward inside it, the wait for the exchange after it, and a
// tick as each gradient is handed over; row "communication" each bucket's reduction. The steps
// keep their times in the run, so they lie one after another along the timeline, with the
// untraced steps' gaps between them.
#include <string>

#include "collectives/buckets/backward_profile.hpp"
#include "collectives/buckets/replay.hpp"
#include "common/trace_events.hpp"

namespace sb {

constexpr int kReplayComputeTrack = 0;
constexpr int kReplayCommunicationTrack = 1;

// configuration: what the step ran ("fixed, 4 MiB buckets"); args_json: its figures, the members
// of a JSON object without braces.
void trace_replayed_step(TraceRecorder& trace, const std::string& configuration, const std::string& args_json,
                         const BackwardProfile& profile, const ReplayResult& step);

}  // namespace sb
