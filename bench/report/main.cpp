// sb-report: a campaign's results files in, plots and tables out. Reads results files, merged
// campaign files and folders (skipping, and naming, files it cannot use), optionally merges them
// into one HDF5 file, then writes the report folder: data/*.dat, *.gp, *.png, *.svg, summary.txt,
// index.html and tables/*.csv (every row of every run). No MPI: it runs on a login node.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <set>

#include "bench/report/options.hpp"
#include "common/check.hpp"
#include "common/closed_stdout.hpp"
#include "common/sizes.hpp"
#include "common/text_fields.hpp"
#include "common/usage_error.hpp"
#include "results/campaign.hpp"
#include "results/merge.hpp"
#include "results/report/gnuplot_files.hpp"
#include "results/report/summary.hpp"
#include "results/report/tables.hpp"

namespace {

// --by must name a label that some run carries: a misspelt key would silently draw nothing new.
void check_by_label(const sb::Campaign& campaign, const std::string& key) {
  if (key.empty()) return;
  const std::set<std::string> keys = sb::label_keys(campaign.runs);
  if (keys.count(key)) return;
  const std::string known = sb::join_list(keys);
  throw sb::UsageError("--by '" + key + "': no run has that label (" +
                       (known.empty() ? std::string("the runs have no labels") : "labels: " + known) + ")");
}

// --size must be a size some sweep measured: the allreduce scaling plots of a size no run has
// (a typo, 64K for 64M) were left out without a word. Sizes are the sb-allreduce sweeps' (the
// scaling plots) and sb-compress's (its trade-off plots take --size too); a campaign with
// neither has nothing --size applies to, and is not refused for it.
void check_size(const sb::Campaign& campaign, uint64_t size) {
  if (size == 0) return;
  std::set<double> measured;
  for (const sb::Run& run : campaign.runs) {
    const char* group = run.program == "sb-allreduce" ? "allreduce" : run.program == "sb-compress" ? "compress" : nullptr;
    if (!group || !run.root->has(group)) continue;
    const sb::h5::Node sweep = run.root->open_group(group);
    for (const std::string& child : sweep.children())
      for (double bytes : sweep.open_group(child).read_doubles("size_bytes")) measured.insert(bytes);
  }
  if (measured.empty() || measured.count(static_cast<double>(size))) return;
  throw sb::UsageError("--size " + sb::format_size(size) + "B: no sb-allreduce or sb-compress run measured it (they measured " +
                       sb::format_size(static_cast<uint64_t>(*measured.begin())) + "B to " +
                       sb::format_size(static_cast<uint64_t>(*measured.rbegin())) + "B)");
}

int report(const sb::ReportProgramOptions& o) {
  sb::Campaign campaign = sb::load_campaign(o.inputs);
  sb::report::skip_unplottable_runs(campaign, o.report);
  check_by_label(campaign, o.report.by);
  check_size(campaign, o.report.size_bytes);
  // --merge may rewrite an earlier merged file among the inputs (its runs are read first, and all
  // go into the new one), but not a run's own file.
  if (!o.merge.empty()) sb::refuse_writing_over_a_run(campaign, o.merge, "--merge");
  for (const sb::SkippedFile& skipped : campaign.skipped)
    std::fprintf(stderr, "sb-report: skipped %s: %s\n", skipped.path.c_str(), skipped.reason.c_str());
  if (!campaign.repeated.empty())
    std::fprintf(stderr, "sb-report: %zu runs read more than once, each counted once (%s is the same run as %s%s)\n",
                 campaign.repeated.size(), campaign.repeated.front().source.c_str(),
                 campaign.repeated.front().same_as.c_str(), campaign.repeated.size() > 1 ? ", ..." : "");
  if (!o.merge.empty()) {
    const size_t runs = sb::merge_campaign(campaign, o.merge);
    std::printf("sb-report: merged %zu runs into %s (%zu files skipped)\n", runs, o.merge.c_str(),
                campaign.skipped.size());
  }
  if (!o.write_report) return 0;

  std::error_code error;
  std::filesystem::create_directories(o.out + "/data", error);
  if (error) throw sb::UsageError("--out: cannot create '" + o.out + "/data': " + error.message());
  const std::vector<sb::report::Plot> plots = sb::report::build_plots(campaign.runs, o.report);
  for (const sb::report::Plot& plot : plots) {
    sb::report::write_plot_data(plot, o.out);
    sb::report::write_plot_script(plot, o.formats, o.out);
  }
  if (o.render && (o.formats.png || o.formats.svg)) sb::report::render_plots(plots, o.formats, o.out, o.gnuplot);
  sb::report::write_summary(plots, campaign, o.out);
  const std::vector<sb::report::TableFile> tables = sb::report::write_tables(campaign.runs, o.samples, o.out);
  sb::report::write_index(plots, campaign, o.formats, tables, o.out);  // last: it links to the rest
  for (const sb::report::Plot& plot : plots) std::printf("  %-40s %s\n", plot.name.c_str(), plot.title.c_str());
  size_t rows = 0;
  for (const sb::report::TableFile& table : tables) rows += table.rows;
  std::printf("sb-report: %zu plots from %zu runs (%zu files skipped): %s/index.html\n", plots.size(),
              campaign.runs.size(), campaign.skipped.size(), o.out.c_str());
  std::printf("sb-report: %zu rows in %zu CSV tables: %s/tables\n", rows, tables.size(), o.out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  sb::outlive_closed_stdout("sb-report");
  try {
    std::optional<sb::ReportProgramOptions> options = sb::parse_report_options(argc, argv);
    return options ? report(*options) : 0;
  } catch (const sb::UsageError& e) {
    std::fprintf(stderr, "sb-report: error: %s\n", e.what());
    return sb::kExitUsage;
  } catch (const sb::LibraryError& e) {
    std::fprintf(stderr, "sb-report: error: %s\n", e.what());
    return sb::kExitFault;
  }
}
