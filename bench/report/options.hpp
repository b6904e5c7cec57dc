#pragma once
// sb-report's command line.
#include <optional>
#include <string>
#include <vector>

#include "results/report/gnuplot_files.hpp"
#include "results/report/plot.hpp"

namespace sb {

struct ReportProgramOptions {
  std::vector<std::string> inputs;  // results files, merged files, campaign folders
  std::string out = "out/report";   // the report folder
  bool write_report = true;         // false for --merge alone
  std::string merge;                // --merge FILE
  report::ReportOptions report;
  report::ImageFormats formats;
  bool render = true;
  bool samples = false;             // --samples: the per-iteration and per-rank-step CSV tables too
  std::string gnuplot = "gnuplot";
};

// Throws UsageError for bad input; nullopt after --help.
std::optional<ReportProgramOptions> parse_report_options(int argc, char** argv);

}  // namespace sb
