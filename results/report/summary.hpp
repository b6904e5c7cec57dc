#pragma once
// The report's two front pages: summary.txt, every plot's numbers as plain-text tables (for
// diffing two campaigns, or reading on a login node), and index.html, every image with its title,
// the runs it came from, the files that were skipped and links to the CSV tables, so one file shows
// the whole campaign.
#include <string>
#include <vector>

#include "results/campaign.hpp"
#include "results/report/gnuplot_files.hpp"
#include "results/report/plot.hpp"
#include "results/report/tables.hpp"

namespace sb::report {

void write_summary(const std::vector<Plot>& plots, const Campaign& campaign, const std::string& dir);
void write_index(const std::vector<Plot>& plots, const Campaign& campaign, const ImageFormats& formats,
                 const std::vector<TableFile>& tables, const std::string& dir);

}  // namespace sb::report
