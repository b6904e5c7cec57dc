// sb-micro's main(): its own flags (--out, --label), Google Benchmark's for the rest, the
// benchmarks run through MicroResultsReporter, and the results file written at the end, or with
// the rows measured when SIGINT/SIGTERM ends the run. One process: no MPI.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "bench/micro/results_reporter.hpp"
#include "common/atomic_file.hpp"
#include "common/check.hpp"
#include "common/closed_stdout.hpp"
#include "common/command_line.hpp"
#include "common/text_fields.hpp"
#include "common/usage_error.hpp"
#include "common/watchdog.hpp"
#include "results/run_metadata.hpp"

namespace sb {
namespace {

constexpr const char* kProgram = "sb-micro";

struct MicroOptions {
  std::string out;
  std::map<std::string, std::string> labels;
  std::vector<std::string> benchmark_flags;  // --benchmark_*=VALUE, for Google Benchmark
};

std::optional<MicroOptions> parse_micro_options(int argc, char** argv) {
  CLI::App app(
      "sb-micro: the kernels one at a time under Google Benchmark, each beside memcpy's rate on the same traffic\n"
      "measured in the same process (x_memcpy), top-k beside std::nth_element (x_nth_element).");
  app.footer(
      "Google Benchmark's flags work too, as --flag=VALUE: --benchmark_filter=REGEX,\n"
      "--benchmark_format=console|json|csv, --benchmark_min_time=SECONDS, --benchmark_repetitions=N,\n"
      "--benchmark_out=FILE, --benchmark_list_tests=true, ...");
  app.allow_extras();
  MicroOptions o;
  std::vector<std::string> label_texts;
  app.add_option("--out", o.out, "results file [out/micro-<UTC time>-<pid>.h5]");
  app.add_option("--label", label_texts, "key=value tag recorded in the results (repeatable)");
  if (!parse_command_line(app, argc, argv, true)) return std::nullopt;
  for (const std::string& label : label_texts) add_label(o.labels, label);
  o.benchmark_flags = app.remaining();
  for (const std::string& flag : o.benchmark_flags)
    if (flag.rfind("--benchmark_", 0) != 0 && flag != "--v" && flag.rfind("--v=", 0) != 0)
      throw UsageError("unknown argument '" + flag + "' (sb-micro takes --out, --label and --benchmark_*=VALUE)");
  return o;
}

// The value of --NAME=VALUE among the flags, or `fallback`.
std::string flag_value(const std::vector<std::string>& flags, const std::string& name, const std::string& fallback) {
  const std::string prefix = "--" + name + "=";
  std::string value = fallback;
  for (const std::string& flag : flags)
    if (flag.rfind(prefix, 0) == 0) value = flag.substr(prefix.size());
  return value;
}

bool is_true(const std::string& value) { return value == "true" || value == "yes" || value == "1"; }

// Values Google Benchmark takes but cannot run: fewer than one repetition (-1 reached the
// reporter, whose reserve() failed: a fault, exit 3), and a time that is not finite, or negative
// (1e400, read as infinity, ran forever).
void require_runnable(const std::vector<std::string>& flags) {
  const std::string repetitions = flag_value(flags, "benchmark_repetitions", "1");
  if (const std::optional<int64_t> count = parse_whole_integer(repetitions); count && *count < 1)
    throw UsageError("--benchmark_repetitions must be at least 1, not " + repetitions);
  for (const char* name : {"benchmark_min_time", "benchmark_min_warmup_time"}) {
    const std::string value = flag_value(flags, name, "");
    char* end = nullptr;
    const double seconds = std::strtod(value.c_str(), &end);
    if (end != value.c_str() && !(std::isfinite(seconds) && seconds >= 0))
      throw UsageError(std::string("--") + name + " must be a finite number of seconds, not '" + value + "'");
  }
}

// The display Google Benchmark would make of the same flags, after the checks of what it would
// end the process on itself (an unknown format, exit 0; an --benchmark_out it cannot open, exit 1),
// which are bad input here.
std::unique_ptr<benchmark::BenchmarkReporter> display_for(const std::vector<std::string>& flags) {
  const std::string out_format = flag_value(flags, "benchmark_out_format", "json");
  if (out_format != "console" && out_format != "json" && out_format != "csv")
    throw UsageError("--benchmark_out_format is console, json or csv, not '" + out_format + "'");
  // Google Benchmark exits 1 on a --benchmark_out it cannot open, after the run has started.
  const std::string out = flag_value(flags, "benchmark_out", "");
  if (!out.empty())
    if (const std::string why = why_not_writable(out); !why.empty()) throw UsageError("--benchmark_out: " + why);
  const std::string color = flag_value(flags, "benchmark_color", "auto");
  return make_display_reporter(flag_value(flags, "benchmark_format", "console"),
                               color == "auto" ? ::isatty(STDOUT_FILENO) != 0 : is_true(color),
                               is_true(flag_value(flags, "benchmark_counters_tabular", "false")));
}

WorldLayout this_process() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  WorldLayout layout;
  layout.hosts = {host};
  return layout;
}

int run(int argc, char** argv) {
  const std::optional<MicroOptions> parsed = parse_micro_options(argc, argv);
  if (!parsed) return 0;
  const MicroOptions& o = *parsed;
  require_runnable(o.benchmark_flags);
  std::unique_ptr<benchmark::BenchmarkReporter> display = display_for(o.benchmark_flags);
  std::vector<std::string> words = {argv[0]};
  words.insert(words.end(), o.benchmark_flags.begin(), o.benchmark_flags.end());
  std::vector<char*> benchmark_argv;
  for (std::string& word : words) benchmark_argv.push_back(word.data());
  int benchmark_argc = static_cast<int>(benchmark_argv.size());
  // Google Benchmark says why it refuses a flag's value on std::cerr; that becomes the one line.
  std::ostringstream refusal;
  std::streambuf* const cerr_buffer = std::cerr.rdbuf(refusal.rdbuf());
  benchmark::Initialize(&benchmark_argc, benchmark_argv.data());
  std::cerr.rdbuf(cerr_buffer);
  if (benchmark_argc > 1) {  // what Google Benchmark did not take: a misspelt flag or a bad value
    const std::string why = refusal.str().substr(0, refusal.str().find('\n'));
    throw UsageError(why.empty() ? std::string("Google Benchmark does not take '") + benchmark_argv[1] + "'" : why);
  }
  std::cerr << refusal.str();

  RunMetadata metadata = describe_run(kProgram, argc, argv);
  metadata.layout = this_process();
  metadata.labels = o.labels;
  auto file = std::make_unique<ResultsFile>(o.out.empty() ? default_results_path("micro") : o.out);
  Watchdog* watching = nullptr;
  MicroResultsReporter reporter(std::move(display), std::move(file), metadata, [&](const std::string& what) {
    if (watching) watching->phase(what);
  });
  Watchdog watchdog(0, 0, [&](const std::string& reason) { reporter.save(reason); });
  watching = &watchdog;
  watchdog.phase("running the benchmarks");
  const size_t matched = benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  if (reporter.ran()) {
    reporter.save("complete");
    return 0;
  }
  reporter.discard();  // --benchmark_list_tests, or a filter that matched nothing (Google Benchmark said so)
  return matched == 0 ? kExitUsage : 0;
}

}  // namespace
}  // namespace sb

int main(int argc, char** argv) {
  sb::outlive_closed_stdout("sb-micro");
  sb::block_termination_signals();  // before any thread starts: SIGINT/SIGTERM go to the watchdog
  try {
    return sb::run(argc, argv);
  } catch (const sb::UsageError& e) {
    std::fprintf(stderr, "sb-micro: error: %s\n", e.what());
    return sb::kExitUsage;
  } catch (const std::exception& e) {
    sb::die(__FILE__, __LINE__, std::string("sb-micro: ") + e.what());
  }
}
