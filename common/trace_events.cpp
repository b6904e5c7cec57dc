#include "common/trace_events.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>

#include "common/atomic_file.hpp"
#include "common/check.hpp"
#include "common/json_text.hpp"

namespace sb {

void TraceRecorder::start(MPI_Comm comm) {
  if (started_) throw std::logic_error("a trace is started once");
  SB_MPI_CHECK(MPI_Comm_rank(comm, &pid_));
  SB_MPI_CHECK(MPI_Barrier(comm));
  origin_ = Clock::now();
  origin_wtime_ = MPI_Wtime();
  started_ = true;
}

double TraceRecorder::microseconds(Clock::time_point t) const {
  return std::chrono::duration<double, std::micro>(t - origin_).count();
}

void TraceRecorder::span(int track, std::string_view name, std::string_view category, Clock::time_point start,
                         Clock::time_point end, std::string_view args_json) {
  const double from = microseconds(start);
  append('X', track, name, category, from, std::max(microseconds(end) - from, 0.0), args_json);
}

void TraceRecorder::span_wtime(int track, std::string_view name, std::string_view category, double start,
                               double end, std::string_view args_json) {
  append('X', track, name, category, (start - origin_wtime_) * 1e6, std::max(end - start, 0.0) * 1e6, args_json);
}

void TraceRecorder::instant(int track, std::string_view name, std::string_view category, Clock::time_point at,
                            std::string_view args_json) {
  append('i', track, name, category, microseconds(at), 0, args_json);
}

void TraceRecorder::instant_wtime(int track, std::string_view name, std::string_view category, double at,
                                  std::string_view args_json) {
  append('i', track, name, category, (at - origin_wtime_) * 1e6, 0, args_json);
}

void TraceRecorder::append(char phase, int track, std::string_view name, std::string_view category,
                           double start_us, double duration_us, std::string_view args_json) {
  if (!started_) throw std::logic_error("an event recorded before its trace started");
  // A time that is not a finite number of microseconds within a day of the origin (a clock read
  // wrong) would not be JSON, or would not fit `head`: it goes in as 0 rather than spoil the file.
  const auto sane = [](double us) { return std::isfinite(us) && std::fabs(us) < 8.64e10 ? us : 0.0; };
  start_us = sane(start_us);
  duration_us = sane(duration_us);
  char head[160];
  std::snprintf(head, sizeof head, "{\"ph\":\"%c\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,", phase, pid_, track, start_us);
  text_ += head;
  if (phase == 'X') {
    std::snprintf(head, sizeof head, "\"dur\":%.3f,", duration_us);
    text_ += head;
  } else {
    text_ += "\"s\":\"t\",";  // an instant on its thread's row alone
  }
  text_ += "\"name\":" + json_string(name) + ",\"cat\":" + json_string(category);
  if (!args_json.empty()) {
    text_ += ",\"args\":{";
    text_ += args_json;
    text_ += '}';
  }
  text_ += "},\n";
  ++events_;
}

namespace {

// Names for the viewer: each rank a process "rank R" in rank order, each track a named row in
// track order. The last one ends without the comma that every event before it has.
std::string names(int ranks, const std::vector<std::string>& tracks) {
  std::string text;
  const auto meta = [&](int pid, int tid, const char* what, const std::string& args) {
    if (!text.empty()) text += ",\n";
    text += "{\"ph\":\"M\",\"pid\":" + std::to_string(pid) + (tid >= 0 ? ",\"tid\":" + std::to_string(tid) : "") +
            ",\"name\":\"" + what + "\",\"args\":{" + args + "}}";
  };
  for (int rank = 0; rank < ranks; ++rank) {
    meta(rank, -1, "process_name", "\"name\":" + json_string("rank " + std::to_string(rank)));
    meta(rank, -1, "process_sort_index", "\"sort_index\":" + std::to_string(rank));
    for (size_t t = 0; t < tracks.size(); ++t) {
      meta(rank, static_cast<int>(t), "thread_name", "\"name\":" + json_string(tracks[t]));
      meta(rank, static_cast<int>(t), "thread_sort_index", "\"sort_index\":" + std::to_string(t));
    }
  }
  return text + "\n";
}

// A rank's events travel in pieces that an int count can say.
constexpr int64_t kPiece = INT_MAX / 2;

}  // namespace

size_t write_trace(MPI_Comm comm, const std::string& path, const TraceRecorder& recorder,
                   const std::vector<std::string>& tracks, const TraceAbout& about) {
  int rank = 0, ranks = 1;
  SB_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  SB_MPI_CHECK(MPI_Comm_size(comm, &ranks));
  const std::string& mine = recorder.json_events();
  const int64_t counts[2] = {static_cast<int64_t>(mine.size()), static_cast<int64_t>(recorder.events())};
  std::vector<int64_t> all(rank == 0 ? 2 * static_cast<size_t>(ranks) : 0);
  SB_MPI_CHECK(MPI_Gather(counts, 2, MPI_INT64_T, all.data(), 2, MPI_INT64_T, 0, comm));
  if (rank != 0) {
    for (int64_t sent = 0; sent < counts[0]; sent += kPiece) {
      const int piece = static_cast<int>(std::min(kPiece, counts[0] - sent));
      SB_MPI_CHECK(MPI_Send(mine.data() + sent, piece, MPI_CHAR, 0, 0, comm));
    }
    return 0;
  }
  // Rank 0 writes each rank's events as they arrive, one rank's at a time in memory.
  AtomicFileWriter file(path);
  file.write("{\"traceEvents\":[\n");
  file.write(mine);
  size_t events = recorder.events();
  std::string theirs;
  for (int from = 1; from < ranks; ++from) {
    theirs.resize(static_cast<size_t>(all[2 * from]));
    for (int64_t got = 0; got < all[2 * from]; got += kPiece) {
      const int piece = static_cast<int>(std::min(kPiece, all[2 * from] - got));
      SB_MPI_CHECK(MPI_Recv(theirs.data() + got, piece, MPI_CHAR, from, 0, comm, MPI_STATUS_IGNORE));
    }
    file.write(theirs);
    events += static_cast<size_t>(all[2 * from + 1]);
  }
  file.write(names(ranks, tracks));
  std::string other = "],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{";
  for (size_t i = 0; i < about.size(); ++i) {
    if (i > 0) other += ',';
    other += json_string(about[i].first);
    other += ':';
    other += json_string(about[i].second);
  }
  file.write(other + "}}\n");
  file.commit(/*sync=*/false);
  return events;
}

}  // namespace sb
