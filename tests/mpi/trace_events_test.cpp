// The Chrome trace at 1..5 ranks: every rank's events reach rank 0's file, named and placed as
// recorded, and the file is JSON (checked by a small parser here, so that the test needs nothing
// beyond the suite).
#include "common/trace_events.hpp"

#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace sb {
namespace {

// A strict JSON reader that only says whether `text` is one JSON value (RFC 8259), nothing after it.
class JsonChecker {
 public:
  explicit JsonChecker(const std::string& text) : s_(text) {}
  bool valid() {
    bool ok = value();
    space();
    return ok && i_ == s_.size();
  }

 private:
  void space() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool eat(char c) {
    space();
    if (i_ < s_.size() && s_[i_] == c) return ++i_, true;
    return false;
  }
  bool word(const char* w) {
    const std::string text(w);
    if (s_.compare(i_, text.size(), text) != 0) return false;
    i_ += text.size();
    return true;
  }
  bool string() {
    if (!eat('"')) return false;
    while (i_ < s_.size() && s_[i_] != '"') {
      const unsigned char c = static_cast<unsigned char>(s_[i_]);
      if (c < 0x20) return false;
      if (c == '\\') {
        if (++i_ >= s_.size()) return false;
        if (s_[i_] == 'u') {
          for (int k = 0; k < 4; ++k)
            if (++i_ >= s_.size() || !std::isxdigit(static_cast<unsigned char>(s_[i_]))) return false;
        } else if (std::string("\"\\/bfnrt").find(s_[i_]) == std::string::npos) {
          return false;
        }
      }
      ++i_;
    }
    return eat('"');
  }
  bool number() {
    const size_t start = i_;
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    const auto numeric = [](char c) {
      return std::isdigit(static_cast<unsigned char>(c)) || std::string(".eE+-").find(c) != std::string::npos;
    };
    while (i_ < s_.size() && numeric(s_[i_])) ++i_;
    return i_ > start && std::isdigit(static_cast<unsigned char>(s_[i_ - 1]));
  }
  template <class Item>
  bool sequence(char close, Item item) {
    if (eat(close)) return true;
    do
      if (!item()) return false;
    while (eat(','));
    return eat(close);
  }
  bool value() {
    space();
    if (i_ >= s_.size()) return false;
    switch (s_[i_]) {
      case '{': ++i_; return sequence('}', [&] { return string() && eat(':') && value(); });
      case '[': ++i_; return sequence(']', [&] { return value(); });
      case '"': return string();
      case 't': return word("true");
      case 'f': return word("false");
      case 'n': return word("null");
      default: return number();
    }
  }
  const std::string& s_;
  size_t i_ = 0;
};

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(JsonChecker, TellsJsonFromNotJson) {
  EXPECT_TRUE(JsonChecker(R"({"a":[1,-2.5e3,"x\"y\u00e9",true,null,{}],"b":{}})").valid());
  for (const char* bad : {R"({"a":1,})", R"([1 2])", R"({"a"})", "[\"\n\"]", R"(["\q"])", "{}{}", "[1,]", "-"})
    EXPECT_FALSE(JsonChecker(bad).valid()) << bad;
}

TEST(TraceEvents, EveryRanksEventsReachOneJsonFile) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  TraceRecorder trace;
  trace.start(MPI_COMM_WORLD);
  using Clock = TraceRecorder::Clock;
  const Clock::time_point begin = Clock::now();
  const double wtime = MPI_Wtime();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  // rank r records r + 2 spans on track 0, one on track 1 timed by MPI_Wtime, and an instant.
  for (int k = 0; k < rank + 2; ++k)
    trace.span(0, "op \"" + std::to_string(k) + "\"", "op", begin, Clock::now(), "\"k\":" + std::to_string(k));
  trace.span_wtime(1, "bucket 0", "allreduce", wtime, MPI_Wtime(), "\"bytes\":4096");
  trace.instant(0, "layer1.0.conv1.weight", "gradient ready", Clock::now());
  EXPECT_EQ(trace.events(), static_cast<size_t>(rank + 4));

  const std::string path =
      (std::filesystem::temp_directory_path() / ("sb-trace-" + std::to_string(::getpid()) + ".json")).string();
  // Every rank names rank 0's path: only rank 0 writes.
  std::string shared = path;
  int length = static_cast<int>(shared.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD);
  shared.resize(static_cast<size_t>(length));
  MPI_Bcast(shared.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD);
  const size_t written =
      write_trace(MPI_COMM_WORLD, shared, trace, {"compute", "communication"}, {{"why", "a \"test\""}});
  if (rank != 0) {
    EXPECT_EQ(written, 0u);
    return;
  }
  const size_t expected = static_cast<size_t>(ranks * (ranks + 1) / 2 + 3 * ranks);  // sum of r + 4
  EXPECT_EQ(written, expected);
  std::ifstream in(shared);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::filesystem::remove(shared);
  EXPECT_TRUE(JsonChecker(text).valid()) << text.substr(0, 2000);
  EXPECT_EQ(text.rfind("{\"traceEvents\":[", 0), 0u);
  EXPECT_NE(text.find("\"otherData\":{\"why\":\"a \\\"test\\\"\"}"), std::string::npos);
  for (int r = 0; r < ranks; ++r) {
    const std::string pid = "\"pid\":" + std::to_string(r) + ",";
    EXPECT_EQ(occurrences(text, "{\"ph\":\"X\"," + pid + "\"tid\":0,"), static_cast<size_t>(r + 2)) << "rank " << r;
    EXPECT_EQ(occurrences(text, "{\"ph\":\"X\"," + pid + "\"tid\":1,"), 1u) << "rank " << r;
    EXPECT_EQ(occurrences(text, "{\"ph\":\"i\"," + pid + "\"tid\":0,"), 1u) << "rank " << r;
    EXPECT_NE(text.find("\"args\":{\"name\":\"rank " + std::to_string(r) + "\"}"), std::string::npos) << "rank " << r;
  }
  EXPECT_EQ(occurrences(text, "\"name\":\"op \\\"0\\\"\""), static_cast<size_t>(ranks)) << "the quotes escaped";
  EXPECT_EQ(occurrences(text, "\"thread_name\",\"args\":{\"name\":\"communication\"}"), static_cast<size_t>(ranks));
  // Times count from the origin that start() took, which every event here follows.
  EXPECT_EQ(text.find("\"ts\":-"), std::string::npos) << "an event before the barrier every rank left";
}

// sb-buckets times its replayed steps with MPI_Wtime and sb-train its ops with the steady clock:
// a moment read on both lands at one place in the trace.
TEST(TraceEvents, BothClocksPlaceAMomentAlike) {
  TraceRecorder trace;
  trace.start(MPI_COMM_WORLD);
  std::this_thread::sleep_for(std::chrono::milliseconds(3));
  const double wtime = MPI_Wtime();
  const TraceRecorder::Clock::time_point steady = TraceRecorder::Clock::now();
  trace.instant_wtime(0, "fc.weight", "gradient ready", wtime);
  trace.span_wtime(1, "bucket 0", "allreduce", wtime, wtime + 0.001);
  trace.instant(0, "fc.weight", "gradient ready", steady);
  std::vector<double> ts;
  const std::string& text = trace.json_events();
  for (size_t at = text.find("\"ts\":"); at != std::string::npos; at = text.find("\"ts\":", at + 1))
    ts.push_back(std::stod(text.substr(at + 5)));
  ASSERT_EQ(ts.size(), 3u) << text;
  EXPECT_EQ(ts[0], ts[1]) << "an instant and a span at one MPI_Wtime";
  EXPECT_GE(ts[0], 3000.0) << "3 ms after the origin";
  EXPECT_NEAR(ts[2], ts[0], 1000.0) << "the steady clock's reading of the same moment, in microseconds";
  EXPECT_NE(text.find("\"dur\":1000.000"), std::string::npos) << text;
}

}  // namespace
}  // namespace sb
