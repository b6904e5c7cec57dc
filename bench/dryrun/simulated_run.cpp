#include "bench/dryrun/simulated_run.hpp"

#include <unistd.h>

#include <filesystem>

#include "collectives/algorithms/algorithms.hpp"
#include "common/usage_error.hpp"

namespace sb {

RunMetadata simulated_metadata(const RunMetadata& base, const std::string& program, const sim::Machine& machine,
                               int nranks) {
  RunMetadata m = base;
  m.program = program;
  m.run_id = new_run_id();  // each predicted run is a run of its own
  const int per_node = machine.levels.front().size > 0 ? machine.levels.front().size : nranks;
  m.layout = WorldLayout{};
  m.layout.nranks = nranks;
  m.layout.local_size = std::min(per_node, nranks);
  m.layout.nodes = (nranks + per_node - 1) / per_node;
  m.layout.max_ranks_per_node = m.layout.local_size;
  for (int r = 0; r < nranks; ++r) m.layout.hosts.push_back("sim-node" + std::to_string(r / per_node));
  m.devices.clear();
  m.environment.clear();  // the settings of this process do not describe the simulated run
  return m;
}

void mark_simulated(const h5::Node& root, const sim::Machine& machine, const std::string& machine_path) {
  root.set_attr("simulated", int64_t{1});
  if (!root.has_attr("status")) write_run_end(root, "complete");
  root.set_attr("machine_name", machine.name);
  root.set_attr("machine_file", machine_path);
  root.set_attr("machine", sim::format_machine(machine));
}

std::string results_folder(const DryrunOptions& o) {
  std::string folder = o.out;
  if (folder.empty()) {
    std::string stamp = utc_now();
    for (char& c : stamp)
      if (c == ':') c = '-';
    folder = "out/dryrun-" + stamp + "-" + std::to_string(::getpid());
  }
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  if (error) throw UsageError("--out: cannot create '" + folder + "': " + error.message());
  return folder;
}

std::vector<ImplVariant> impl_variants(const DryrunOptions& o) {
  std::vector<ImplVariant> variants;
  for (const std::string& impl : o.impls) {
    if (impl == "mpi" || impl == "nccl") {
      variants.push_back({impl, Transport::mpi, true, impl});
      continue;
    }
    for (const Transport transport : o.transports)
      variants.push_back({impl, transport, false, impl + "@" + std::string(name_of(transport))});
  }
  return variants;
}

sim::AllreduceCase allreduce_case(const DryrunOptions& o, const sim::Machine& machine, const ImplVariant& variant,
                                  int nranks) {
  const TorusShape torus = dryrun_torus(o, machine, nranks);
  sim::AllreduceCase c;
  c.impl = variant.impl;
  c.transport = variant.transport;
  c.nranks = nranks;
  c.type = o.type;
  c.segment_bytes = o.segment_bytes;
  c.node_size = o.node_size;
  c.torus_x = torus.x;
  c.torus_y = torus.y;
  return c;
}

TorusShape dryrun_torus(const DryrunOptions& o, const sim::Machine& machine, int nranks) {
  if (o.torus_x > 0) {
    if (o.torus_x * o.torus_y != nranks)
      throw UsageError("--torus " + std::to_string(o.torus_x) + "x" + std::to_string(o.torus_y) + " does not make " +
                       std::to_string(nranks) + " ranks");
    return {o.torus_x, o.torus_y};
  }
  const int node = machine.levels.front().size;
  if (node > 1 && nranks > node && nranks % node == 0) return {node, nranks / node};
  return torus_shape(nranks, 0, 0);
}

}  // namespace sb
