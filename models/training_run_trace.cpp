// --trace: a Chrome trace of a few steps on every rank, as Horovod's timeline shows one. Row
// "compute" holds each step, its phases (the loader wait, forward and backward, the wait for the
// gradient exchange, the optimizer step) and, inside them, every op of the backend; a tick where
// backward hands each gradient to the exchange. Row "communication" holds each bucket's reduction,
// from its start to its end, on the exchange's thread (or, with --progress poll, from its posting
// to the test that found it done). Overlap is then what one sees: buckets running under backward's ops.
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "collectives/buckets/bucket_trace.hpp"
#include "models/training_run.hpp"

namespace sb::models {

bool TrainingRun::trace_step_begins(int64_t run_here) {
  if (config_.trace.empty() || trace_written_ || run_here < 1 || run_here > config_.trace_steps) return false;
  if (!trace_.started()) trace_.start(comm_);  // every rank at the same step: collective
  return true;
}

// After the step's last op: its phases and the buckets' reductions (their times come from the
// exchange once it has finished).
void TrainingRun::trace_step_phases(Clock::time_point start, Clock::time_point backward_end,
                                    Clock::time_point optimizer_start) {
  trace_.span(kComputeTrack, "forward and backward", "step", start, backward_end);
  if (exchange_) trace_.span(kComputeTrack, "waiting for the gradient exchange", "step", backward_end, optimizer_start);
  trace_.span(kComputeTrack, "optimizer step", "step", optimizer_start, Clock::now());
  if (!exchange_) return;
  trace_bucket_spans(trace_, kCommunicationTrack, exchange_->plan(), exchange_->bucket_spans());
}

void TrainingRun::trace_step_ends(int64_t run_here, int64_t step, int64_t images, Clock::time_point step_start) {
  profiler_->set_trace(nullptr, kComputeTrack);
  trace_.span(kComputeTrack, "step " + std::to_string(step), "step", step_start, Clock::now(),
              "\"step\":" + std::to_string(step) + ",\"images\":" + std::to_string(images));
  tracing_ = false;
  if (trace_first_step_ == 0) trace_first_step_ = step;
  trace_last_step_ = step;
  if (run_here == config_.trace_steps) write_trace_file();
}

// Collective: every rank that started the trace writes it; one that did not (a run of fewer than
// two steps) says so, on rank 0.
void TrainingRun::write_trace_file() {
  trace_written_ = true;
  if (!trace_.started()) {
    log("[trace] nothing traced: the trace starts at this process's second step, and the run took %zu\n",
        result_.step_seconds.size());
    return;
  }
  beat("writing the trace");
  const TraceAbout about = {
      {"program", "sb-train"},
      {"model", config_.model},
      {"ranks", std::to_string(nranks_)},
      {"algo", config_.exchange.algorithm},
      {"bucket_strategy", bucket_strategy_name(config_.bucket_strategy)},
      {"progress", progress_name(config_.exchange.progress)},
      {"overlap", config_.exchange.overlap ? "1" : "0"},
      {"clock", "microseconds since a barrier every rank left at the first traced step"}};
  const size_t events = write_trace(comm_, config_.trace, trace_, {"compute", "communication"}, about);
  log("[trace] %zu events of %d rank%s, steps %lld to %lld, written to %s: open it in ui.perfetto.dev or "
      "chrome://tracing\n",
      events, nranks_, nranks_ == 1 ? "" : "s", static_cast<long long>(trace_first_step_),
      static_cast<long long>(trace_last_step_), config_.trace.c_str());
}

}  // namespace sb::models
