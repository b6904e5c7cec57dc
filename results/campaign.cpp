#include "results/campaign.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <ranges>
#include <system_error>

#include "common/check.hpp"
#include "common/isolated_call.hpp"
#include "common/text_fields.hpp"
#include "common/usage_error.hpp"

namespace sb {
namespace fs = std::filesystem;
namespace {

bool looks_like_results(const fs::path& path) {
  const std::string name = path.filename().string();
  return path.extension() == ".h5" || name.find(".h5.tmp-") != std::string::npos;
}

Run describe(std::shared_ptr<const ResultsReader> file, std::shared_ptr<const h5::Node> root, std::string name,
             const fs::path& path, const std::string& group) {
  Run run;
  run.name = std::move(name);
  run.file_path = path.string();
  run.source = group.empty() ? run.file_path : run.file_path + ":/" + group;
  run.program = root->attr_string("program");
  if (root->has_attr("run_id")) run.run_id = root->attr_string("run_id");
  run.ranks = root->attr_int("ranks");
  // Every program writes the ranks it ran on (or predicted for); scaling plots step from the
  // smallest by doubling, which a count below 1 would never end.
  if (run.ranks < 1 || run.ranks > (int64_t{1} << 30))
    throw UsageError("ranks " + std::to_string(run.ranks) + " is not a rank count (a damaged file)");
  run.simulated = root->has_attr("simulated") && root->attr_int("simulated") == 1;
  if (root->has_attr("status")) run.status = root->attr_string("status");
  if (root->has("labels")) {
    const h5::Node labels = root->open_group("labels");
    for (const std::string& key : labels.attr_names()) run.labels[key] = labels.attr_string(key);
  }
  run.file = std::move(file);
  run.root = std::move(root);
  return run;
}

// Reads the whole file once in a child process, so that damage is found before any use of the
// file, where it can be named: a flipped byte in a heap or an attribute's message fails a call
// (HDF5's reason is the message) or crashes HDF5 1.10 outright (the child's crash, not ours); a
// flipped bit in a value, which HDF5 reads without complaint, does not match the file's seal.
void verify_content_in_child(const fs::path& path) {
  constexpr std::chrono::seconds kReadLimit{120};
  const IsolatedOutcome outcome = call_isolated(
      [&] {
        h5::silence_error_stack();
        ResultsReader(path.string()).verify_content();
      },
      kReadLimit);
  switch (outcome.ending) {
    case IsolatedOutcome::Ending::returned: return;
    case IsolatedOutcome::Ending::threw: throw UsageError(outcome.failure);
    case IsolatedOutcome::Ending::crashed: throw UsageError("a damaged file: HDF5 crashed reading it (" + outcome.failure + ")");
    case IsolatedOutcome::Ending::timed_out: throw UsageError("a damaged file: HDF5 was " + outcome.failure + " reading it");
    case IsolatedOutcome::Ending::other: throw UsageError("cannot check it: " + outcome.failure);
  }
}

// The runs of one file; adds the file to campaign.run_files when it holds one run, and the files a
// merged file says were skipped when it was made to campaign.skipped. Throws UsageError or
// LibraryError when the file cannot be used.
std::vector<Run> open_runs(const fs::path& path, Campaign& campaign) {
  if (path.filename().string().find(".tmp-") != std::string::npos)
    throw UsageError("the temporary file of an unfinished run (killed, or still running)");
  verify_content_in_child(path);
  auto file = std::make_shared<const ResultsReader>(path.string());
  const int64_t version = file->schema_version();
  if (version < kOldestReadableSchemaVersion || version > kSchemaVersion)
    throw UsageError("schema_version " + std::to_string(version) + ", and this sb-report reads " +
                     std::to_string(kOldestReadableSchemaVersion) + " to " + std::to_string(kSchemaVersion));
  const h5::Node& root = file->root();
  if (!root.has_attr("program")) throw UsageError("not a program's results (a checkpoint?)");
  // A run's root node must outlive the reader's own handle, so each run opens its group anew.
  auto open = [&](const std::string& group) {
    return std::make_shared<const h5::Node>(root.open_group(group));
  };
  std::vector<Run> runs;
  if (root.attr_string("program") != kMergeProgram) {
    if (!root.has_attr("ranks")) throw UsageError("no 'ranks' attribute: not a complete results file");
    runs.push_back(describe(file, open("."), path.stem().string(), path, ""));
    campaign.run_files.push_back(path.string());
    return runs;
  }
  // A merged file: /runs/<program>/ranks-<N>/<labels>/<name>, a fixed depth of four.
  if (root.has_attr("skipped"))
    for (const std::string& entry : root.attr_strings("skipped")) {
      const size_t colon = entry.find(": ");
      if (colon != std::string::npos)
        campaign.skipped.push_back({entry.substr(0, colon), entry.substr(colon + 2) + " (" + path.string() + ")"});
    }
  if (!root.has(kMergedRunsGroup)) return runs;
  const h5::Node all = root.open_group(kMergedRunsGroup);
  for (const std::string& program : all.children()) {
    const h5::Node by_program = all.open_group(program);
    for (const std::string& ranks : by_program.children()) {
      const h5::Node by_ranks = by_program.open_group(ranks);
      for (const std::string& labels : by_ranks.children()) {
        const h5::Node by_labels = by_ranks.open_group(labels);
        for (const std::string& name : by_labels.children()) {
          const std::string group =
              std::string(kMergedRunsGroup) + "/" + program + "/" + ranks + "/" + labels + "/" + name;
          runs.push_back(describe(file, open(group), name, path, group));
        }
      }
    }
  }
  return runs;
}

// A merged file read beside the files it was made from would count each of their runs twice: in
// the scaling medians, the summary's counts and the plots' lines.
void keep_each_run_once(Campaign& campaign) {
  std::map<std::string, std::string> first_source;  // run_id -> source
  std::vector<Run> kept;
  for (Run& run : campaign.runs) {
    if (!run.run_id.empty()) {
      const auto [first, inserted] = first_source.emplace(run.run_id, run.source);
      if (!inserted) {
        campaign.repeated.push_back({run.source, first->second});
        continue;
      }
    }
    kept.push_back(std::move(run));
  }
  campaign.runs = std::move(kept);
}

// The reader's messages name the file; the campaign names it once, before the reason.
std::string reason_without_path(std::string reason, const std::string& path) {
  for (const std::string& quoted : {"'" + path + "' ", " '" + path + "'"})
    for (size_t at; (at = reason.find(quoted)) != std::string::npos;) reason.erase(at, quoted.size());
  return reason;
}

}  // namespace

std::set<std::string> label_keys(const std::vector<Run>& runs) {
  std::set<std::string> keys;
  for (const Run& run : runs)
    for (const auto& label : run.labels) keys.insert(label.first);
  return keys;
}

std::string Run::label(const std::string& key) const {
  auto it = labels.find(key);
  return it == labels.end() ? std::string() : it->second;
}

std::string Run::labels_text(std::string_view separator) const {
  return join_list(labels | std::views::transform([](const auto& label) { return label.first + "=" + label.second; }),
                   separator);
}

void refuse_writing_over_a_run(const Campaign& campaign, const std::string& path, const std::string& flag) {
  for (const std::string& file : campaign.run_files) {
    std::error_code error;
    if (fs::equivalent(file, path, error))
      throw UsageError(flag + " '" + path + "' is one of the runs read (" + file +
                       "): writing it would replace that run's file");
  }
}

Campaign load_campaign(const std::vector<std::string>& inputs) {
  Campaign campaign;
  for (const std::string& input : inputs) {
    std::error_code error;
    const fs::file_status status = fs::status(input, error);
    if (error || !fs::exists(status)) throw UsageError("'" + input + "' does not exist");
    if (!fs::is_directory(status)) {
      try {
        std::vector<Run> runs = open_runs(input, campaign);
        for (Run& run : runs) campaign.runs.push_back(std::move(run));
      } catch (const std::runtime_error& e) {  // UsageError or LibraryError
        throw UsageError("'" + input + "': " + reason_without_path(e.what(), input));
      }
      continue;
    }
    std::vector<fs::path> found;
    for (fs::recursive_directory_iterator it(input, error), end; !error && it != end; it.increment(error))
      if (it->is_regular_file() && looks_like_results(it->path())) found.push_back(it->path());
    if (error) throw UsageError("cannot search '" + input + "': " + error.message());
    std::sort(found.begin(), found.end());
    for (const fs::path& path : found) {
      try {
        std::vector<Run> runs = open_runs(path, campaign);
        for (Run& run : runs) campaign.runs.push_back(std::move(run));
      } catch (const std::runtime_error& e) {
        campaign.skipped.push_back({path.string(), reason_without_path(e.what(), path.string())});
      }
    }
  }
  keep_each_run_once(campaign);
  if (campaign.runs.empty()) {
    std::string message = "no scalebench results files found in";
    for (const std::string& input : inputs) message += " '" + input + "'";
    if (!campaign.skipped.empty())
      message += " (" + std::to_string(campaign.skipped.size()) + " skipped: " + campaign.skipped.front().path + ": " +
                 campaign.skipped.front().reason + (campaign.skipped.size() > 1 ? ", ...)" : ")");
    throw UsageError(message);
  }
  return campaign;
}

}  // namespace sb
