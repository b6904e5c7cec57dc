#include "results/merge.hpp"

#include <set>

#include "common/check.hpp"
#include "results/run_metadata.hpp"

namespace sb {
namespace {

// HDF5 link names may hold anything but '/', and '.' alone names the group itself.
std::string link_name(std::string text) {
  for (char& c : text)
    if (c == '/') c = '_';
  return text.empty() || text == "." ? "_" + text : text;
}

std::string labels_name(const Run& run) {
  if (run.labels.empty()) return "no-labels";
  return link_name(run.labels_text(","));
}

}  // namespace

size_t merge_campaign(const Campaign& campaign, const std::string& out_path) {
  ResultsFile out(out_path, ResultsFile::Build::in_memory);  // H5Ocopy below (see Build)
  const h5::Node& root = out.root();
  root.set_attr("program", kMergeProgram);
  root.set_attr("version", scalebench_version());
  root.set_attr("git_commit", scalebench_git_commit());
  root.set_attr("start_time_utc", utc_now());

  h5::Handle create_parents(SB_H5_CHECK(H5Pcreate(H5P_LINK_CREATE)), H5Pclose);
  SB_H5_CHECK(H5Pset_create_intermediate_group(create_parents.get(), 1));
  std::set<std::string> taken;
  std::vector<std::string> sources;
  for (const Run& run : campaign.runs) {
    const std::string parent = std::string(kMergedRunsGroup) + "/" + link_name(run.program) + "/ranks-" +
                               std::to_string(run.ranks) + "/" + labels_name(run);
    std::string group = parent + "/" + link_name(run.name);
    for (int copy = 2; taken.count(group); ++copy) group = parent + "/" + link_name(run.name) + "-" + std::to_string(copy);
    taken.insert(group);
    // The whole run (its root attributes, labels and every dataset) as it was written.
    SB_H5_CHECK(H5Ocopy(run.root->id(), ".", root.id(), group.c_str(), H5P_DEFAULT, create_parents.get()));
    sources.push_back(run.source);
  }
  std::vector<std::string> skipped;
  for (const SkippedFile& file : campaign.skipped) skipped.push_back(file.path + ": " + file.reason);
  root.set_attr("runs", static_cast<int64_t>(campaign.runs.size()));
  root.set_attr("merged_from", sources);
  root.set_attr("skipped", skipped);
  write_run_end(root, "complete");
  out.commit();
  return campaign.runs.size();
}

}  // namespace sb
