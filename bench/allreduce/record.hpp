#pragma once
// sb-allreduce's results in its HDF5 file, as results/SCHEMA.md describes them.
#include <string>
#include <vector>

#include "bench/allreduce/options.hpp"
#include "bench/allreduce/sweep.hpp"
#include "results/allreduce_record.hpp"
#include "results/h5.hpp"
#include "results/run_metadata.hpp"

namespace sb {

// `status` is "complete", or why the run ended early (its finished sizes are all there).
void write_allreduce_results(const h5::Node& root, const RunMetadata& metadata,
                             const AllreduceOptions& options, const MemcpyBandwidth& memcpy,
                             const std::vector<ImplResult>& impls, const std::string& status);

}  // namespace sb
