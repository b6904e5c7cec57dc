#include "bench/allreduce/record.hpp"

#include "collectives/algorithms/algorithms.hpp"

namespace sb {

void write_allreduce_results(const h5::Node& root, const RunMetadata& metadata,
                             const AllreduceOptions& o, const MemcpyBandwidth& memcpy,
                             const std::vector<ImplResult>& impls,
                             const std::string& status) {
  AllreduceSweepSettings s;
  s.datatype = std::string(name_of(o.type));
  s.op = std::string(name_of(o.op));
  s.min_bytes = o.min_bytes;
  s.max_bytes = o.max_bytes;
  s.step_factor = o.step_factor;
  s.step_bytes = o.step_bytes;
  s.iters = o.iters;
  s.warmup_iters = o.warmup_iters;
  s.check = o.check;
  s.average = static_cast<int>(o.aggregate);
  s.timeout_s = o.timeout_seconds;
  s.memcpy_bytes = memcpy.bytes;
  s.memcpy_GBps = memcpy.GBps;
  for (Transport t : o.transports) s.transports.emplace_back(name_of(t));
  s.segment_bytes = o.segment_bytes;
  s.node_size = o.node_size > 0 ? o.node_size : metadata.layout.local_size;
  const TorusShape torus = torus_shape(metadata.layout.nranks, o.torus_x, o.torus_y);
  s.torus = std::to_string(torus.x) + "x" + std::to_string(torus.y);
  write_allreduce_results(root, metadata, s, impls, status);
}

}  // namespace sb
