#pragma once
// A plot on disk, the gnuplot way: data/NAME.dat (one block per line, addressed by `index`),
// NAME.gp (a script a person can edit and re-run from the report folder: `gnuplot NAME.gp`) and the
// images the script renders, NAME.png (pngcairo) and NAME.svg.
#include <string>
#include <vector>

#include "results/report/plot.hpp"

namespace sb::report {

struct ImageFormats {
  bool png = true, svg = true;
};

void write_plot_data(const Plot& plot, const std::string& dir);
void write_plot_script(const Plot& plot, const ImageFormats& formats, const std::string& dir);

// Runs gnuplot once over every plot's script, in dir, its messages kept in dir/gnuplot.log.
// Throws LibraryError when gnuplot cannot be run or fails, naming the log, or when it left an
// image cut short (gnuplot exits 0 on a full disk): that image is removed, and the error names it.
void render_plots(const std::vector<Plot>& plots, const ImageFormats& formats, const std::string& dir,
                  const std::string& gnuplot = "gnuplot");

// Whether `program` names something that can be run: an executable file when it holds a '/',
// else an executable file in a folder of $PATH (what execvp would find). sb-report asks before it
// writes anything, so a missing gnuplot is a usage error rather than a half-written report.
bool program_found(const std::string& program);

// Whether the file at path ends as a whole PNG (its IEND chunk) or SVG (its closing tag) does.
bool image_is_whole(const std::string& path);

}  // namespace sb::report
