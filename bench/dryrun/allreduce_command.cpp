// sb-dryrun allreduce: for each rank count, every implementation's predicted time at every size,
// printed as one table and written as an sb-allreduce results file (simulated = 1), so that
// sb-report draws the predicted sweep like a measured one.
#include <cstdio>

#include "bench/dryrun/commands.hpp"
#include "bench/dryrun/simulated_run.hpp"
#include "common/sizes.hpp"
#include "results/allreduce_record.hpp"
#include "results/results_file.hpp"
#include "sim/allreduce_model.hpp"

namespace sb {
namespace {

// One predicted row: every rank's finish is its time from the common start (the harness starts
// each iteration from a barrier), so the row's time is their mean, as sb-allreduce's default -a 1.
PlacementResult predicted_placement(const std::vector<double>& finish_s, uint64_t bytes, int nranks) {
  PlacementResult p;
  double sum = 0, low = 1e300, high = 0;
  for (double t : finish_s) {
    sum += t;
    low = std::min(low, t);
    high = std::max(high, t);
  }
  const double n = static_cast<double>(std::max<size_t>(finish_s.size(), 1));
  p.time_us = p.rank_mean_us = sum / n * 1e6;
  p.rank_min_us = (finish_s.empty() ? 0 : low) * 1e6;
  p.rank_max_us = p.median_us = p.p99_us = high * 1e6;
  p.algbw_GBps = p.time_us > 0 ? static_cast<double>(bytes) / (p.time_us * 1e3) : 0;
  p.busbw_GBps = nranks > 1 ? p.algbw_GBps * 2.0 * (nranks - 1) / nranks : 0;
  p.wrong = -1;
  for (double t : finish_s) p.iteration_us.push_back(t * 1e6);
  return p;
}

}  // namespace

int predict_allreduce_sweeps(const DryrunOptions& o, const RunMetadata& metadata) {
  const sim::Machine machine = sim::read_machine(o.machine);
  machine.reduce_rate(o.type);  // a machine without this type's gamma is bad input, before any work
  const size_t element = size_of(o.type);
  // A scale too large to price is bad input, refused before any work: at the largest size, which
  // has the most steps where a schedule cuts messages into segments.
  const std::vector<uint64_t> sizes = o.sizes();
  for (const int nranks : o.ranks)
    for (const ImplVariant& variant : impl_variants(o)) {
      sim::AllreduceCase c = allreduce_case(o, machine, variant, nranks);
      c.count = sizes.empty() ? 0 : sizes.back() / element;
      sim::check_priceable(machine, c);
    }
  const std::string folder = results_folder(o);
  for (const int nranks : o.ranks) {
    const TorusShape torus = dryrun_torus(o, machine, nranks);
    std::vector<ImplResult> impls;
    for (const ImplVariant& variant : impl_variants(o)) {
      ImplResult result;
      result.name = variant.name;
      result.transport = variant.library ? "" : std::string(name_of(variant.transport));
      sim::AllreduceCase c = allreduce_case(o, machine, variant, nranks);
      for (uint64_t bytes : sizes) {
        c.count = bytes / element;
        if (c.count == 0) continue;
        const sim::AllreducePrediction prediction = sim::predict_allreduce(machine, c);
        result.description = "predicted on " + machine.name + " as " + prediction.modelled_as;
        SizeResult size{c.count * element, c.count, predicted_placement(prediction.finish_s, c.count * element, nranks), {}};
        size.in_place = size.out_of_place;
        result.sizes.push_back(size);
      }
      impls.push_back(std::move(result));
    }
    // The table: time per implementation, and the fastest.
    std::printf("# sb-dryrun allreduce: %d ranks on %s (%s), %s; predicted time(us), mean over ranks\n", nranks,
                machine.name.c_str(), o.machine.c_str(), std::string(name_of(o.type)).c_str());
    std::printf("%12s", "size(B)");
    for (const ImplResult& impl : impls) std::printf(" %14s", impl.name.c_str());
    std::printf("  %-16s %10s\n", "fastest", "busbw(GB/s)");
    for (size_t row = 0; !impls.empty() && row < impls.front().sizes.size(); ++row) {
      std::printf("%12s", format_size(impls.front().sizes[row].bytes).c_str());
      size_t best = 0;
      for (size_t k = 0; k < impls.size(); ++k) {
        std::printf(" %14.2f", impls[k].sizes[row].out_of_place.time_us);
        if (impls[k].sizes[row].out_of_place.time_us < impls[best].sizes[row].out_of_place.time_us) best = k;
      }
      std::printf("  %-16s %10.2f\n", impls[best].name.c_str(), impls[best].sizes[row].out_of_place.busbw_GBps);
    }

    AllreduceSweepSettings settings;
    settings.datatype = std::string(name_of(o.type));
    settings.min_bytes = o.min_bytes;
    settings.max_bytes = o.max_bytes;
    settings.step_factor = o.step_factor;
    settings.iters = 1;
    settings.average = 1;
    for (Transport t : o.transports) settings.transports.emplace_back(name_of(t));
    settings.segment_bytes = o.segment_bytes;
    settings.node_size = o.node_size > 0 ? o.node_size : machine.levels.front().size;
    settings.torus = std::to_string(torus.x) + "x" + std::to_string(torus.y);
    ResultsFile file(folder + "/allreduce-np" + std::to_string(nranks) + ".h5");
    write_allreduce_results(file.root(), simulated_metadata(metadata, "sb-allreduce", machine, nranks), settings, impls,
                            "complete");
    mark_simulated(file.root(), machine, o.machine);
    file.commit();
    std::printf("# written: %s\n\n", file.final_path().c_str());
  }
  return 0;
}

}  // namespace sb
