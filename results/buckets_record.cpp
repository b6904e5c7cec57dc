#include "results/buckets_record.hpp"

#include <cstdio>

namespace sb {
namespace {

void write_rows(const h5::Node& group, const std::vector<BucketRow>& rows) {
  std::vector<double> mb, iteration, exposed, comm, negotiation, overlap, starts, ends;
  std::vector<int64_t> buckets, negotiations;
  for (const BucketRow& r : rows) {
    mb.push_back(r.bucket_mb);
    buckets.push_back(static_cast<int64_t>(r.buckets));
    iteration.push_back(r.iteration_s);
    exposed.push_back(r.exposed_s);
    comm.push_back(r.communication_s);
    negotiation.push_back(r.negotiation_s);
    negotiations.push_back(static_cast<int64_t>(r.negotiations));
    overlap.push_back(r.overlap);
    starts.insert(starts.end(), r.bucket_start_s.begin(), r.bucket_start_s.end());
    ends.insert(ends.end(), r.bucket_end_s.begin(), r.bucket_end_s.end());
  }
  group.write("bucket_mb", mb);
  group.write("buckets", buckets);
  group.write("iteration_s", iteration);
  group.write("exposed_s", exposed);
  group.write("communication_s", comm);
  group.write("negotiation_s", negotiation);
  group.write("negotiations", negotiations);
  group.write("overlap_fraction", overlap);
  group.write("bucket_start_s", starts);
  group.write("bucket_end_s", ends);
}

}  // namespace

std::string cycle_sweep_name(double cycle_ms, bool one_cycle_time, bool polled) {
  char name[48] = "cycle";
  if (!one_cycle_time) std::snprintf(name, sizeof name, "cycle-%gms", cycle_ms);
  return std::string(name) + (polled ? "@poll" : "");
}

std::string sweep_name(BucketStrategy strategy, double cycle_ms, bool one_cycle_time, bool polled) {
  if (strategy == BucketStrategy::cycle) return cycle_sweep_name(cycle_ms, one_cycle_time, polled);
  return bucket_strategy_name(strategy) + (polled ? "@poll" : "");
}

std::string sweep_title(const std::string& name, double cycle_ms) {
  if (cycle_ms <= 0) return name;
  std::string title = name;
  if (const size_t dash = title.find('-'); dash != std::string::npos)
    title.erase(dash, title.find('@', dash) == std::string::npos ? std::string::npos : title.find('@', dash) - dash);
  char cycles[48];
  std::snprintf(cycles, sizeof cycles, " (%g ms cycles)", cycle_ms);
  return title + cycles;
}

void write_buckets_results(const h5::Node& root, const BucketsSettings& s, const BackwardProfile& profile,
                           const std::vector<BucketSweep>& sweeps) {
  const h5::Node buckets = root.create_group("buckets");
  size_t total = 0;
  std::vector<uint64_t> elements;
  for (const GradientTensor& t : profile.tensors) {
    total += t.count;
    elements.push_back(t.count);
  }
  buckets.set_attr("model", s.model);
  buckets.set_attr("backward_s", profile.backward_s);
  if (profile.forward_s > 0) buckets.set_attr("forward_s", profile.forward_s);
  buckets.set_attr("compute_scale", s.compute_scale);
  buckets.set_attr("gradient_bytes", static_cast<int64_t>(total * sizeof(float)));
  buckets.set_attr("algo", s.algo);
  buckets.set_attr("transport", s.transport);
  buckets.set_attr("iters", static_cast<int64_t>(s.iters));
  buckets.set_attr("trace", s.trace);
  if (s.jitter_cv > 0) buckets.set_attr("jitter_cv", s.jitter_cv);
  if (s.straggler > 1) buckets.set_attr("straggler", s.straggler);
  if (s.balanced) buckets.set_attr("balanced", static_cast<int64_t>(1));
  if (s.jitter_cv > 0 || s.straggler > 1) buckets.set_attr("slowest_rank_factor", s.slowest_rank_factor);
  for (const BucketSweep& sweep : sweeps) {
    const h5::Node group = buckets.create_group(sweep.name);
    write_rows(group, sweep.rows);
    if (sweep.cycle_ms > 0) group.set_attr("cycle_ms", sweep.cycle_ms);
  }
  buckets.write("tensor_ready_s", profile.ready_s);
  buckets.write("tensor_elements", elements);
}

}  // namespace sb
