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
// Throws LibraryError when gnuplot cannot be run or fails, naming the log.
void render_plots(const std::vector<Plot>& plots, const std::string& dir, const std::string& gnuplot = "gnuplot");

}  // namespace sb::report
