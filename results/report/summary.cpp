#include "results/report/summary.hpp"

#include <algorithm>
#include <cstdio>
#include <ostream>

#include "common/atomic_file.hpp"
#include "results/report/run_trace.hpp"

namespace sb::report {
namespace {

std::string html(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

std::string cell(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

// A resumed training run's times are its processes' run time (what the plots show); the wall time
// its resumes cost is said beside it.
std::string resumes_text(const Run& run) {
  if (!run.root->has("train")) return "";
  const h5::Node train = run.root->open_group("train");
  if (!train.has_attr("resumes") || train.attr_int("resumes") == 0) return "";
  const int64_t resumes = train.attr_int("resumes");
  const double gap = train.attr_double("resume_gap_s");
  std::string text = "; resumed " + std::to_string(resumes) + (resumes == 1 ? " time" : " times");
  text += gap < 0 ? ", wall time lost not known" : ", " + cell(gap) + " s of wall time beyond its run time";
  if (train.has_attr("resume_setting_changes")) {  // schema 24 on
    const std::vector<std::string> lines = train.attr_strings("resume_setting_changes");
    text += "; settings changed on resume: ";
    for (size_t i = 0; i < lines.size(); ++i) text += (i ? " | " : "") + lines[i];
  }
  return text;
}

// What the run's ranks ran with differently (environment_agreement.hpp; schema 23 on), which
// its figures may owe something to.
std::string differences_text(const Run& run) {
  if (!run.root->has_attr("environment_differences")) return "";
  std::string text = "; the ranks' settings differ: ";
  const std::vector<std::string> lines = run.root->attr_strings("environment_differences");
  for (size_t i = 0; i < lines.size(); ++i) text += (i ? " | " : "") + lines[i];
  return text;
}

// Where the run's --trace is, for summary.txt: the file found, or the path it recorded and that it
// is not there.
std::string trace_text(const RunTrace& trace) {
  if (trace.recorded.empty()) return "";
  return "; trace: " + (trace.found.empty() ? trace.recorded + " (not found)" : trace.found);
}

// The run's --trace as an index.html cell: a link to the file found, or the path recorded.
std::string trace_cell(const RunTrace& trace, const std::string& dir) {
  if (trace.found.empty()) return trace.recorded.empty() ? "" : html(trace.recorded) + " (not found)";
  return "<a href=\"" + relative_href(trace.found, dir) + "\">" + html(trace.found) + "</a>";
}

// A category's name (x = 1, 2, ... on a category axis), else the number.
std::string x_cell(const Plot& plot, double x) {
  const size_t at = static_cast<size_t>(x);
  if (at >= 1 && at <= plot.x_categories.size() && static_cast<double>(at) == x) return plot.x_categories[at - 1];
  return cell(x);
}

}  // namespace

void write_summary(const std::vector<Plot>& plots, const Campaign& campaign, const std::string& dir) {
  const std::string path = dir + "/summary.txt";
  AtomicFile file(path);
  std::ostream& out = file.stream();
  out << "# sb-report: " << campaign.runs.size() << " runs, " << plots.size() << " plots, "
      << campaign.skipped.size() << " files skipped\n";
  for (const Run& run : campaign.runs)
    out << "# run " << run.name << ": " << run.program << ", " << ranks_text(run.ranks) << (run.labels.empty() ? "" : ", ")
        << run.labels_text(" ") << " (" << run.source << ")"
        << (run.status == "complete" ? "" : "; ended early: " + run.status) << resumes_text(run)
        << differences_text(run) << trace_text(trace_of(run)) << "\n";
  for (const SkippedFile& skipped : campaign.skipped) out << "# skipped " << skipped.path << ": " << skipped.reason << "\n";
  for (const RepeatedRun& again : campaign.repeated)
    out << "# read again, counted once: " << again.source << " (the same run as " << again.same_as << ")\n";
  for (const Plot& plot : plots) {
    out << "\n## " << plot.title << "  [" << plot.name << "]\n";
    for (const Series& s : plot.series) {
      out << "### " << s.title << (s.reference ? " (reference)" : "") << "\n";
      char header[256];
      std::snprintf(header, sizeof header, "%24s  %24s%s\n", plot.x_title.substr(0, 24).c_str(),
                    plot.y_title.substr(0, 24).c_str(), s.point_labels.empty() ? "" : "  label");
      out << header;
      for (size_t k = 0; k < s.x.size(); ++k) {
        char row[256];
        std::snprintf(row, sizeof row, "%24s  %24s", x_cell(plot, s.x[k]).c_str(), cell(s.y[k]).c_str());
        out << row << (k < s.point_labels.size() ? "  " + s.point_labels[k] : "") << "\n";
      }
    }
  }
  file.commit();
}

void write_index(const std::vector<Plot>& plots, const Campaign& campaign, const ImageFormats& formats,
                 const std::vector<TableFile>& tables, const std::string& dir) {
  const std::string path = dir + "/index.html";
  AtomicFile file(path);
  std::ostream& out = file.stream();
  out << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>scalebench report</title>\n"
      << "<style>body{font-family:sans-serif;max-width:1100px;margin:auto}img{max-width:100%;border:1px solid #ccc}"
      << "td,th{padding:2px 8px;text-align:left}</style></head><body>\n"
      << "<h1>scalebench report</h1>\n<p>" << campaign.runs.size() << " runs, " << plots.size()
      << " plots. Numbers: <a href=\"summary.txt\">summary.txt</a>; each plot's data in <code>data/</code>, its "
      << "gnuplot script beside its image.</p>\n";
  if (!tables.empty()) {
    out << "<p>Every row of every run, as CSV:";
    for (size_t i = 0; i < tables.size(); ++i)
      out << (i ? "," : "") << " <a href=\"tables/" << tables[i].name << ".csv\">" << tables[i].name << "</a> ("
          << tables[i].rows << " rows)";
    out << ".</p>\n";
  }
  out << "<h2>Contents</h2>\n<ul>\n";
  for (const Plot& plot : plots) out << "<li><a href=\"#" << plot.name << "\">" << html(plot.title) << "</a></li>\n";
  out << "</ul>\n";
  for (const Plot& plot : plots) {
    out << "<h2 id=\"" << plot.name << "\">" << html(plot.title) << "</h2>\n";
    if (formats.png) out << "<img src=\"" << plot.name << ".png\" alt=\"" << html(plot.title) << "\">\n";
    else if (formats.svg) out << "<img src=\"" << plot.name << ".svg\" alt=\"" << html(plot.title) << "\">\n";
    out << "<p>";
    if (formats.svg) out << "<a href=\"" << plot.name << ".svg\">SVG</a> &middot; ";
    out << "<a href=\"" << plot.name << ".gp\">gnuplot script</a> &middot; <a href=\"data/" << plot.name
        << ".dat\">data</a></p>\n";
  }
  std::vector<RunTrace> traces;
  for (const Run& run : campaign.runs) traces.push_back(trace_of(run));
  const bool any_trace = std::any_of(traces.begin(), traces.end(), [](const RunTrace& t) { return !t.recorded.empty(); });
  out << "<h2>Runs</h2>\n";
  if (any_trace)
    out << "<p>A run's trace (<code>--trace</code>) is a Chrome trace of its steps: open it in "
           "<a href=\"https://ui.perfetto.dev\">ui.perfetto.dev</a> or chrome://tracing.</p>\n";
  out << "<table><tr><th>run</th><th>program</th><th>ranks</th><th>labels</th><th>file</th><th>status</th>"
      << (any_trace ? "<th>trace</th>" : "") << "</tr>\n";
  for (size_t i = 0; i < campaign.runs.size(); ++i) {
    const Run& run = campaign.runs[i];
    out << "<tr><td>" << html(run.name) << "</td><td>" << html(run.program) << "</td><td>" << run.ranks << "</td><td>"
        << html(run.labels_text(" ")) << "</td><td>" << html(run.source) << "</td><td>" << html(run.status + resumes_text(run) + differences_text(run))
        << "</td>" << (any_trace ? "<td>" + trace_cell(traces[i], dir) + "</td>" : "") << "</tr>\n";
  }
  out << "</table>\n";
  if (!campaign.skipped.empty()) {
    out << "<h2>Skipped files</h2>\n<ul>\n";
    for (const SkippedFile& skipped : campaign.skipped)
      out << "<li><code>" << html(skipped.path) << "</code>: " << html(skipped.reason) << "</li>\n";
    out << "</ul>\n";
  }
  out << "</body></html>\n";
  file.commit();
}

}  // namespace sb::report
