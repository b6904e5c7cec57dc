#pragma once
// What every file sb-dryrun writes says about itself: the program whose results it predicts (so
// sb-report draws it beside measured runs of that program), the simulated ranks and nodes, and
// `simulated` = 1 with the machine description it was priced on.
#include <string>

#include "bench/dryrun/options.hpp"
#include "collectives/algorithms/algorithms.hpp"
#include "results/h5.hpp"
#include "results/run_metadata.hpp"
#include "sim/allreduce_model.hpp"
#include "sim/machine.hpp"

namespace sb {

// `base` with the program replaced and the layout of `nranks` ranks placed on the machine's
// first level (hosts named sim-node0, sim-node1, ...).
RunMetadata simulated_metadata(const RunMetadata& base, const std::string& program, const sim::Machine& machine,
                               int nranks);

// Root attributes simulated = 1, machine_name, machine_file and machine (its text as priced).
void mark_simulated(const h5::Node& root, const sim::Machine& machine, const std::string& machine_path);

// The results folder of allreduce and train (--out, else out/dryrun-<UTC time>-<pid>), created.
std::string results_folder(const DryrunOptions& options);

// One implementation to price: each --impl (train: --algo) on each --transport, and a library
// baseline once (on the transport the library picks itself).
struct ImplVariant {
  std::string impl;  // mpi, nccl, ring, ...
  Transport transport = Transport::mpi;
  bool library = false;
  std::string name;  // ring@nccl, or nccl
};
std::vector<ImplVariant> impl_variants(const DryrunOptions& options);

// The variant's allreduce at nranks (count 0), with the options' datatype, segment, node size and
// torus grid.
sim::AllreduceCase allreduce_case(const DryrunOptions& options, const sim::Machine& machine, const ImplVariant& variant,
                                  int nranks);

// torus2d's grid: --torus, else X = the machine's first level when it divides nranks (rows are
// nodes, as in Mikami et al.), else the most square.
TorusShape dryrun_torus(const DryrunOptions& options, const sim::Machine& machine, int nranks);

}  // namespace sb
