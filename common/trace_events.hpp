#pragma once
// A timeline of what each rank did, in the Chrome trace event format, which chrome://tracing and
// Perfetto (ui.perfetto.dev) draw: one process per rank, one row (thread) per track, a bar per
// span of work and a tick per instant, as Horovod's timeline shows a training step. Each rank
// records its own events (TraceRecorder); write_trace() gathers them to rank 0, which writes the
// file. Times are microseconds from an origin that every rank takes as it leaves one barrier, so
// ranks line up to within that barrier's exit skew (microseconds on one node; more across nodes).
#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sb {

class TraceRecorder {
 public:
  using Clock = std::chrono::steady_clock;

  // Starts the timeline: a barrier over `comm`, then this rank's origin, on the steady clock and
  // on MPI_Wtime's (for spans that were timed with it). Collective; once, before any event.
  void start(MPI_Comm comm);
  bool started() const { return started_; }

  // A span of work on `track` (a row: 0, 1, ... named by write_trace's `tracks`), from start to end.
  // `args_json`: "" or the members of a JSON object without its braces ("\"bytes\": 4096").
  void span(int track, std::string_view name, std::string_view category, Clock::time_point start,
            Clock::time_point end, std::string_view args_json = {});
  // The same, timed in MPI_Wtime seconds (the gradient exchange's buckets).
  void span_wtime(int track, std::string_view name, std::string_view category, double start, double end,
                  std::string_view args_json = {});
  // A moment on `track` (drawn as a tick).
  void instant(int track, std::string_view name, std::string_view category, Clock::time_point at,
               std::string_view args_json = {});
  // The same, at an MPI_Wtime moment (sb-buckets' replayed hand-overs).
  void instant_wtime(int track, std::string_view name, std::string_view category, double at,
                     std::string_view args_json = {});

  size_t events() const { return events_; }
  // The events as JSON objects, each followed by ",\n", in process `pid` = this rank.
  const std::string& json_events() const { return text_; }

 private:
  void append(char phase, int track, std::string_view name, std::string_view category, double start_us,
              double duration_us, std::string_view args_json);
  double microseconds(Clock::time_point t) const;

  bool started_ = false;
  int pid_ = 0;
  Clock::time_point origin_{};
  double origin_wtime_ = 0;
  // The events, written as JSON as they come: a trace is a few steps of a few thousand events per
  // rank, and text is what it ends as.
  std::string text_;
  size_t events_ = 0;
};

// Collective over `comm`: every rank's events go to rank 0, which
// writes them to `path` (whole or not at all: AtomicFileWriter), with the names of the ranks
// ("rank R") and of their tracks, and `about` (key, value) pairs as the trace's "otherData".
// Returns the number of events written (0 on the other ranks). Throws LibraryError on rank 0
// when the file cannot be written.
using TraceAbout = std::vector<std::pair<std::string, std::string>>;
size_t write_trace(MPI_Comm comm, const std::string& path, const TraceRecorder& recorder,
                   const std::vector<std::string>& tracks, const TraceAbout& about);

}  // namespace sb
