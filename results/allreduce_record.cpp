#include "results/allreduce_record.hpp"

namespace sb {
namespace {

void write_placement(const h5::Node& group, const std::vector<SizeResult>& sizes,
                     const PlacementResult SizeResult::*placement, int nranks, int iters) {
  auto column = [&](double PlacementResult::*field) {
    std::vector<double> values;
    for (const SizeResult& size : sizes) values.push_back(size.*placement.*field);
    return values;
  };
  group.write("time_us", column(&PlacementResult::time_us));
  group.write("rank_min_us", column(&PlacementResult::rank_min_us));
  group.write("rank_mean_us", column(&PlacementResult::rank_mean_us));
  group.write("rank_max_us", column(&PlacementResult::rank_max_us));
  group.write("median_us", column(&PlacementResult::median_us));
  group.write("p99_us", column(&PlacementResult::p99_us));
  group.write("algbw_GBps", column(&PlacementResult::algbw_GBps));
  group.write("busbw_GBps", column(&PlacementResult::busbw_GBps));
  std::vector<int64_t> wrong;
  std::vector<double> iterations;
  for (const SizeResult& size : sizes) {
    wrong.push_back((size.*placement).wrong);
    const auto& times = (size.*placement).iteration_us;
    iterations.insert(iterations.end(), times.begin(), times.end());
  }
  group.write("wrong", wrong);
  group.write("iteration_us", iterations,
              {sizes.size(), static_cast<hsize_t>(nranks), static_cast<hsize_t>(iters)});
}

}  // namespace

void write_allreduce_results(const h5::Node& root, const RunMetadata& metadata, const AllreduceSweepSettings& s,
                             const std::vector<ImplResult>& impls, const std::string& status) {
  write_run_metadata(root, metadata);
  write_run_end(root, status);

  const h5::Node allreduce = root.create_group("allreduce");
  allreduce.set_attr("datatype", s.datatype);
  allreduce.set_attr("op", s.op);
  allreduce.set_attr("min_bytes", static_cast<int64_t>(s.min_bytes));
  allreduce.set_attr("max_bytes", static_cast<int64_t>(s.max_bytes));
  allreduce.set_attr("step_factor", static_cast<int64_t>(s.step_factor));
  allreduce.set_attr("step_bytes", static_cast<int64_t>(s.step_bytes));
  allreduce.set_attr("iters", static_cast<int64_t>(s.iters));
  allreduce.set_attr("warmup_iters", static_cast<int64_t>(s.warmup_iters));
  allreduce.set_attr("check", static_cast<int64_t>(s.check));
  allreduce.set_attr("average", static_cast<int64_t>(s.average));
  allreduce.set_attr("timeout_s", s.timeout_s);
  allreduce.set_attr("busbw_factor", std::string("2(p-1)/p"));
  allreduce.set_attr("memcpy_bytes", static_cast<int64_t>(s.memcpy_bytes));
  allreduce.set_attr("memcpy_GBps", s.memcpy_GBps);
  allreduce.set_attr("transports", s.transports);
  allreduce.set_attr("segment_bytes", static_cast<int64_t>(s.segment_bytes));
  allreduce.set_attr("node_size", static_cast<int64_t>(s.node_size));
  allreduce.set_attr("torus", s.torus);

  for (const ImplResult& impl : impls) {
    const h5::Node group = allreduce.create_group(impl.name);
    group.set_attr("description", impl.description);
    group.set_attr("implementation", impl.name.substr(0, impl.name.find('@')));
    group.set_attr("transport", impl.transport.empty() ? std::string("library") : impl.transport);
    group.set_attr("memory", std::string(impl.devices.empty() ? "host" : "device"));
    if (!impl.devices.empty()) group.set_attr("devices", impl.devices);
    std::vector<uint64_t> bytes, counts;
    for (const SizeResult& size : impl.sizes) {
      bytes.push_back(size.bytes);
      counts.push_back(size.count);
    }
    group.write("size_bytes", bytes);
    group.write("count", counts);
    write_placement(group.create_group("out_of_place"), impl.sizes, &SizeResult::out_of_place,
                    metadata.layout.nranks, s.iters);
    write_placement(group.create_group("in_place"), impl.sizes, &SizeResult::in_place, metadata.layout.nranks,
                    s.iters);
  }
}

}  // namespace sb
