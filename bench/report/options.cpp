#include "bench/report/options.hpp"

#include <CLI/CLI.hpp>

#include "common/command_line.hpp"
#include "common/sizes.hpp"
#include "common/text_fields.hpp"
#include "common/usage_error.hpp"
#include "results/report/gnuplot_files.hpp"

namespace sb {

std::optional<ReportProgramOptions> parse_report_options(int argc, char** argv) {
  ReportProgramOptions o;
  std::string size, formats = "png,svg";
  CLI::App app("sb-report: turns scalebench results (files, merged campaign files or campaign folders) into gnuplot\n"
               "data, editable .gp scripts, PNG and SVG plots, summary.txt and index.html: busbw and latency vs size,\n"
               "speedup and efficiency vs ranks, time-to-accuracy curves, bucket sweeps, compression trade-offs,\n"
               "kernel rates; and tables/*.csv, every row of every run with its run's metadata and labels.\n"
               "With --merge, gathers the runs into one HDF5 file (and reports too when --out is given).",
               "sb-report");
  app.add_option("inputs", o.inputs, "results files, merged files or folders searched for *.h5")->required();
  CLI::Option* out = app.add_option("--out", o.out, "report folder [out/report]");
  app.add_option("--merge", o.merge, "write the campaign's runs into this one HDF5 file");
  app.add_option("--by", o.report.by, "split lines by this --label key (e.g. interconnect)");
  app.add_option("--size", size, "message size of the allreduce scaling plots, e.g. 64M [the largest in every run]");
  app.add_option("--format", formats, "image formats: png, svg or png,svg [png,svg]");
  bool no_render = false;
  app.add_flag("--no-render", no_render, "write data and scripts but run no gnuplot");
  app.add_option("--gnuplot", o.gnuplot, "the gnuplot to run [gnuplot]");
  app.add_flag("--samples", o.samples,
               "also write the per-sample CSV tables: every timed allreduce iteration of every rank, every rank's "
               "step times (large at scale)");
  if (!parse_command_line(app, argc, argv, true)) return std::nullopt;
  o.render = !no_render;
  if (!size.empty()) o.report.size_bytes = parse_size(size, "--size");
  o.formats = {false, false};
  for (const std::string& format : split_list(formats)) {
    if (format == "png") o.formats.png = true;
    else if (format == "svg") o.formats.svg = true;
    else throw UsageError("--format takes png and svg, not '" + format + "'");
  }
  o.write_report = o.merge.empty() || out->count() > 0;
  if (o.out.empty()) throw UsageError("--out must name a folder");
  if (o.write_report && o.render && (o.formats.png || o.formats.svg) && !report::program_found(o.gnuplot))
    throw UsageError("--gnuplot: cannot find '" + o.gnuplot + "' (install gnuplot-nox, or pass --no-render)");
  return o;
}

}  // namespace sb
