#pragma once
// The Chrome trace a run wrote beside its results (sb-train and sb-buckets --trace), as the report
// lists it: the path the run recorded, and where that file is now, when it can be found. A run
// records the path as it was given, relative to the folder the run started in; a campaign is often
// reported from elsewhere, or copied with its traces beside its results files, so the trace is
// also looked for under its own name in the results file's folder.
#include <string>

#include "results/campaign.hpp"

namespace sb::report {

struct RunTrace {
  std::string recorded;  // the --trace path the run recorded; empty: it wrote none
  std::string found;     // an existing file: the recorded path, or its name beside the run's file; empty: neither
};

RunTrace trace_of(const Run& run);

// `path` (a file) as a link from a page in `page_dir`: relative to that folder, each byte that is
// not a letter, digit, '/', '-', '.', '_' or '~' percent-encoded (RFC 3986), so that a name with a
// space, '#' or '?' still names the file.
std::string relative_href(const std::string& path, const std::string& page_dir);

}  // namespace sb::report
