#pragma once
// Campaign merge: the runs of a campaign gathered into one HDF5 file, each run's whole file
// copied under /runs/<program>/ranks-<N>/<labels>/<name>, with the files that were skipped and
// why on the root group. sb-report reads a merged file like the folder it came from.
#include <string>

#include "results/campaign.hpp"

namespace sb {

// Writes OUT (through a temporary name, like every results file). Returns the runs written.
size_t merge_campaign(const Campaign& campaign, const std::string& out_path);

}  // namespace sb
