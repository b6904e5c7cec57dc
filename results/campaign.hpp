#pragma once
// A campaign: the runs that sb-report reads, from results files named on the command line,
// folders searched for *.h5, and merged campaign files (sb-report --merge), all seen as one list
// of runs. Files found in a folder that cannot be used (truncated, of another schema version,
// a temporary name of an unfinished run) are skipped and listed with the reason, so one bad file
// does not cost the rest of a campaign; a file named explicitly that cannot be read is bad input.
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "results/h5.hpp"
#include "results/results_file.hpp"

namespace sb {

// One run: the root group of a results file, or a run's group inside a merged file.
struct Run {
  std::string name;    // short name for legends: the file's stem
  std::string source;  // where it came from: path, or path:/group for a merged run
  std::string file_path;  // the results file it was read from (the path of source)
  std::string program;
  std::string run_id;  // empty in files before schema 12
  int64_t ranks = 0;
  bool simulated = false;  // written by sb-dryrun: a prediction, drawn as "(predicted)"
  // "complete", or why the run ended early (its file holds what it finished); files from before
  // sb-train wrote `status` count as complete.
  std::string status = "complete";
  std::map<std::string, std::string> labels;
  std::shared_ptr<const ResultsReader> file;  // keeps the file open while root is used
  std::shared_ptr<const h5::Node> root;

  // The label's value, or "" when the run has no such label.
  std::string label(const std::string& key) const;
  // Every label as key=value, in key order, separated by `separator`; "" when there is none.
  std::string labels_text(std::string_view separator) const;
};

struct SkippedFile {
  std::string path;
  std::string reason;
};

// A run read a second time: a merged file beside the files it was made from, or a copy.
struct RepeatedRun {
  std::string source;   // where it was read again
  std::string same_as;  // the source of the run kept
};

struct Campaign {
  std::vector<Run> runs;  // in path order, so reports are the same from run to run
  std::vector<SkippedFile> skipped;
  std::vector<RepeatedRun> repeated;  // left out of runs: each run counts once
  std::vector<std::string> run_files;  // the files read that hold one run each (not merged files)
};

// Every --label key any of the runs carries, in key order.
std::set<std::string> label_keys(const std::vector<Run>& runs);

// Reads every input: a results file, a merged file, or a folder searched recursively for *.h5
// (and *.h5.tmp-* leftovers, which are listed as skipped). A run read twice (the same run_id) is
// kept once, the first in input and path order. Throws UsageError for an input that does not
// exist, a named file that cannot be used, or when no run is found at all.
Campaign load_campaign(const std::vector<std::string>& inputs);

// Throws UsageError when `path` is the file of one of the campaign's runs, which writing `path`
// (`flag` names where it came from) would replace: sb-report --merge, sb-dryrun validate --out.
void refuse_writing_over_a_run(const Campaign& campaign, const std::string& path, const std::string& flag);

// Where a merged file keeps its runs: /runs/<program>/ranks-<N>/<labels>/<name>.
inline constexpr const char* kMergedRunsGroup = "runs";
inline constexpr const char* kMergeProgram = "sb-report --merge";

}  // namespace sb
