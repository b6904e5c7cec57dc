// sb-dryrun train: a model's training step at each scale and allreduce. The profile's timeline is
// scaled to the machine's compute rate for the model; at each rank count every bucket strategy and
// size is simulated (sim/step_model.hpp) with the buckets' allreduces priced on the machine, and the
// best gives the step: forward + backward + exposed communication. Printed as a scaling table
// (images/s, speedup and efficiency against one rank) and written as one sb-buckets results file per
// scale and allreduce (simulated = 1, with forward_s), which sb-report turns into scaling plots.
#include <cstdio>
#include <functional>
#include <ranges>

#include "bench/dryrun/commands.hpp"
#include "bench/dryrun/simulated_run.hpp"
#include "common/sizes.hpp"
#include "common/text_fields.hpp"
#include "common/usage_error.hpp"
#include "results/buckets_record.hpp"
#include "results/results_file.hpp"
#include "sim/jitter.hpp"
#include "sim/step_model.hpp"

namespace sb {
namespace {

// The profile's times scaled so that forward + backward of `batch` images take as long as the
// machine's compute rate says (linear in the batch). A profile without a forward time is taken to
// spend half its backward time in the forward pass (a backward pass costs about twice the FLOPs).
BackwardProfile scaled_profile(BackwardProfile profile, const sim::ComputeRate& rate, int batch, double& scale) {
  if (profile.forward_s <= 0) profile.forward_s = profile.backward_s / 2;
  const double step_s = batch / rate.images_per_s;
  scale = step_s / (profile.forward_s + profile.backward_s);
  return sim::slowed_profile(std::move(profile), scale);
}

BucketRow row_of(const sim::StepPrediction& p, double mb, size_t buckets) {
  BucketRow row{mb, buckets, p.iteration_s, p.exposed_s, p.communication_s, p.overlap, p.bucket_start_s, p.bucket_end_s};
  row.negotiation_s = p.negotiation_s;
  row.negotiations = p.negotiations;
  return row;
}

struct Best {
  std::string strategy;
  BucketRow row;
};

}  // namespace

int predict_training_steps(const DryrunOptions& o, const RunMetadata& metadata) {
  const sim::Machine machine = sim::read_machine(o.machine);
  // Without a compute line for the model, the profile's own times are the machine's (a profile
  // measured on it), at --batch images per rank (sb-buckets' default 32).
  const auto rate = machine.compute.find(o.model);
  const bool scaled = rate != machine.compute.end();
  // A --model the machine has no line for (a typo, a model it was not described with) would
  // otherwise price the step at the profile's own times, those of wherever it was measured.
  if (!scaled && o.model_named) {
    const std::string known = join_list(std::views::keys(machine.compute));
    throw UsageError("--model " + o.model + ": " + o.machine + " has no compute line for it (" +
                     (known.empty() ? std::string("it has none: leave --model out to use the profile's own times")
                                    : "it has: " + known) +
                     ")");
  }
  const int batch = o.batch > 0 ? o.batch : scaled ? rate->second.batch : 32;
  double scale = 1;
  BackwardProfile profile = read_backward_profile(o.profile);
  if (scaled) profile = scaled_profile(profile, rate->second, batch, scale);
  else if (profile.forward_s <= 0) profile.forward_s = profile.backward_s / 2;
  machine.reduce_rate(DataType::float32);
  size_t total = 0;
  for (const GradientTensor& t : profile.tensors) total += t.count;
  const double compute_s = profile.forward_s + profile.backward_s;

  std::printf("# sb-dryrun train: %s on %s, batch %d per rank: forward %.2f ms + backward %.2f ms (profile x %.3g), "
              "%zu tensors, %.1f MiB of fp32 gradients\n",
              o.model.c_str(), machine.name.c_str(), batch, profile.forward_s * 1e3, profile.backward_s * 1e3, scale,
              profile.tensors.size(), total * 4 / kBytesPerMiB);
  if (o.jitter > 0)
    std::printf("# jitter %.3g: each rank's compute time per step x (1 + %.3g z), z normal; each step waits for its "
                "slowest rank (the mean over %d steps; slowest x is its mean factor)\n",
                o.jitter, o.jitter, sim::kJitterSteps);
  if (o.straggler > 1)
    std::printf("# straggler %.3g: one rank's compute time per step x %.3g when there are 2 or more ranks (slowest x: "
                "the mean factor the steps wait for)%s\n", o.straggler, o.straggler,
                o.balance ? "; --balance: every rank's share of the batch in proportion to its speed, so each computes "
                            "n / (n - 1 + 1/straggler) times a healthy rank's equal share"
                          : "");
  const bool spread = o.jitter > 0 || o.straggler > 1;
  // The baselines' plans, the same at every scale: every tensor its own allreduce, and one bucket
  // of everything (twice the gradients' size, as sb-buckets plans it).
  const BucketPlan per_tensor = plan_buckets_swept(profile.tensors, BucketStrategy::per_tensor, 0);
  const BucketPlan fused = plan_buckets_swept(profile.tensors, BucketStrategy::fixed, total * 8.0 / kBytesPerMiB);
  // A scale too large to price is bad input, refused before any work: at the size of all the
  // gradients, the largest allreduce a step makes.
  for (const ImplVariant& variant : impl_variants(o))
    for (const int nranks : o.ranks) {
      sim::AllreduceCase c = allreduce_case(o, machine, variant, nranks);
      c.count = total;
      sim::check_priceable(machine, c);
    }
  const std::string folder = results_folder(o);
  for (const ImplVariant& variant : impl_variants(o)) {
    std::printf("# %s\n%8s  %-22s %12s %12s %12s %9s %10s%s\n", variant.name.c_str(), "ranks", "best bucketing",
                "step(ms)", "exposed(ms)", "images/s", "speedup", "efficiency", spread ? "  slowest x" : "");
    for (const int nranks : o.ranks) {
      sim::StepModel model(machine, allreduce_case(o, machine, variant, nranks));
      // Without jitter, one bin: each row priced once, on the profile as it is (or the straggler's).
      const sim::SlowestRankFactors slowest =
          o.balance ? sim::scaled_factors(sim::slowest_rank_factors(o.jitter, nranks),
                                          sim::balanced_factor(nranks, o.straggler))
                    : sim::slowest_rank_factors(o.jitter, nranks, o.straggler);
      const auto expected = [&](const std::function<sim::StepPrediction(const BackwardProfile&)>& predict) {
        return sim::expected_step(slowest, profile, predict);
      };
      std::vector<BucketSweep> sweeps;
      const sim::StepPrediction no_overlap =
          expected([&](const BackwardProfile& p) { return sim::predict_step(p, per_tensor, model, false); });
      sweeps.push_back({"no-overlap", {row_of(no_overlap, 0, per_tensor.buckets.size())}});
      const sim::StepPrediction all_fused =
          expected([&](const BackwardProfile& p) { return sim::predict_step(p, fused, model, false); });
      sweeps.push_back({"fused", {row_of(all_fused, total * 4 / kBytesPerMiB, 1)}});
      Best best{"fused", sweeps.back().rows.front()};
      for (const BucketStrategy strategy : o.strategies)
        for (const double cycle_ms : strategy == BucketStrategy::cycle ? o.cycle_ms : std::vector<double>{0}) {
          BucketSweep sweep{sweep_name(strategy, cycle_ms, o.cycle_ms.size() == 1, false), {}, cycle_ms};
          const std::vector<double> sizes =
              strategy == BucketStrategy::per_tensor ? std::vector<double>{0} : o.bucket_sizes_mb();
          for (const double mb : sizes) {
            const sim::StepPrediction p = expected([&](const BackwardProfile& slowed) {
              return sim::predict_swept_step(slowed, strategy, mb, cycle_ms * 1e-3, model, true);
            });
            sweep.rows.push_back(row_of(p, mb, p.bucket_start_s.size()));
            if (sweep.rows.back().iteration_s < best.row.iteration_s) best = {sweep.name, sweep.rows.back()};
          }
          sweeps.push_back(std::move(sweep));
        }
      // The step ends with the slowest rank's last bucket, and that rank's forward took F times
      // the profile's too: the forward at the mean factor.
      const double step_s = slowest.mean * profile.forward_s + best.row.iteration_s;
      const double speedup = nranks * compute_s / step_s;
      char bucketing[64];
      std::snprintf(bucketing, sizeof bucketing, "%s %.2f MiB", best.strategy.c_str(), best.row.bucket_mb);
      std::printf("%8d  %-22s %12.2f %12.2f %12.0f %9.2f %9.1f%%", nranks, bucketing, step_s * 1e3,
                  best.row.exposed_s * 1e3, nranks * batch / step_s, speedup, 100 * speedup / nranks);
      if (spread) std::printf("  %10.4f", slowest.mean);
      std::printf("\n");

      BucketsSettings settings;
      settings.model = o.model;
      settings.compute_scale = scale;
      settings.jitter_cv = o.jitter;
      settings.straggler = o.straggler;
      settings.balanced = o.balance;
      settings.slowest_rank_factor = slowest.mean;
      settings.algo = variant.impl;
      settings.transport = variant.library ? (variant.impl == "nccl" ? "nccl" : "library") : std::string(name_of(variant.transport));
      ResultsFile file(folder + "/buckets-np" + std::to_string(nranks) + "-" + variant.impl +
                       (variant.library ? "" : "-" + std::string(name_of(variant.transport))) + ".h5");
      write_run_metadata(file.root(), simulated_metadata(metadata, "sb-buckets", machine, nranks));
      write_buckets_results(file.root(), settings, profile, sweeps);
      file.root().open_group("buckets").set_attr("batch_per_rank", static_cast<int64_t>(batch));
      mark_simulated(file.root(), machine, o.machine);
      file.commit();
    }
  }
  std::printf("# written: %s/buckets-np*.h5\n", folder.c_str());
  return 0;
}

}  // namespace sb
