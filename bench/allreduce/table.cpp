#include "bench/allreduce/table.hpp"

#include <algorithm>

#include "common/sizes.hpp"
#include "results/run_metadata.hpp"

namespace sb {
namespace {

std::string format_time(double us) {
  char text[32];
  std::snprintf(text, sizeof text, us < 1e4 ? "%.2f" : us < 1e6 ? "%.1f" : "%.0f", us);
  return text;
}

std::string format_placement(const PlacementResult& r) {
  char text[96];
  const std::string wrong = r.wrong < 0 ? "N/A" : std::to_string(r.wrong);
  std::snprintf(text, sizeof text, "  %8s  %7.2f  %7.2f  %6s", format_time(r.time_us).c_str(),
                r.algbw_GBps, r.busbw_GBps, wrong.c_str());
  return text;
}

}  // namespace

void print_run_header(std::FILE* out, const AllreduceOptions& o, const WorldLayout& layout,
                      const std::vector<int>& pids) {
  std::fprintf(out, "# sb-allreduce %s (%s)\n", scalebench_version().c_str(),
               scalebench_git_commit().c_str());
  std::string step = o.step_factor ? std::to_string(o.step_factor) + "(factor)"
                                   : std::to_string(o.step_bytes) + "(bytes)";
  std::fprintf(out,
               "# nranks %d nodes %d ranksPerNode %d minBytes %llu maxBytes %llu step: %s "
               "warmup iters: %d iters: %d validation: %d average: %d (%s) timeout: %gs\n",
               layout.nranks, layout.nodes, layout.max_ranks_per_node,
               static_cast<unsigned long long>(o.min_bytes),
               static_cast<unsigned long long>(o.max_bytes), step.c_str(), o.warmup_iters,
               o.iters, o.check ? 1 : 0, static_cast<int>(o.aggregate),
               std::string(name_of(o.aggregate)).c_str(), o.timeout_seconds);
  std::fprintf(out, "#\n");
  for (int rank = 0; rank < layout.nranks; ++rank)
    std::fprintf(out, "#  Rank %2d Pid %6d on %10s\n", rank, pids[static_cast<size_t>(rank)],
                 layout.hosts[static_cast<size_t>(rank)].c_str());
  std::fprintf(out, "#\n");
}

void print_table_header(std::FILE* out, const ImplResult& impl) {
  std::fprintf(out, "# impl %s: %s\n", impl.name.c_str(), impl.description.c_str());
  for (size_t rank = 0; rank < impl.devices.size(); ++rank)
    std::fprintf(out, "#  Rank %2zu device %s\n", rank, impl.devices[rank].c_str());
  // Each label centred over its 36-column block, after the 54 columns that describe the size.
  auto centred = [](const std::string& label) {
    const size_t pad = (36 - label.size()) / 2;
    return std::string(pad, ' ') + label + std::string(36 - pad - label.size(), ' ');
  };
  std::fprintf(out, "#%53s%s%s\n", "", centred("out-of-place").c_str(), centred("in-place").c_str());
  std::fprintf(out, "# %12s  %12s  %8s  %6s  %6s  %8s  %7s  %7s  %6s  %8s  %7s  %7s  %6s\n",
               "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
               "time", "algbw", "busbw", "#wrong");
  std::fprintf(out, "# %12s  %12s  %8s  %6s  %6s  %8s  %7s  %7s  %6s  %8s  %7s  %7s  %6s\n",
               "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
               "(GB/s)", "");
  std::fflush(out);
}

std::string format_table_row(const SizeResult& size, const AllreduceOptions& options) {
  char text[96];
  std::snprintf(text, sizeof text, "  %12llu  %12llu  %8s  %6s  %6d",
                static_cast<unsigned long long>(size.bytes),
                static_cast<unsigned long long>(size.count),
                std::string(name_of(options.type)).c_str(),
                std::string(name_of(options.op)).c_str(), -1);
  return text + format_placement(size.out_of_place) + format_placement(size.in_place);
}

void print_table_row(std::FILE* out, const SizeResult& size, const AllreduceOptions& options) {
  std::fprintf(out, "%s\n", format_table_row(size, options).c_str());
  std::fflush(out);
}

int64_t total_wrong(const ImplResult& impl) {
  int64_t wrong = 0;
  for (const SizeResult& size : impl.sizes)
    wrong += std::max<int64_t>(size.out_of_place.wrong, 0) + std::max<int64_t>(size.in_place.wrong, 0);
  return wrong;
}

double average_busbw(const ImplResult& impl) {
  if (impl.sizes.empty()) return 0;
  double sum = 0;
  for (const SizeResult& size : impl.sizes) sum += size.out_of_place.busbw_GBps + size.in_place.busbw_GBps;
  return sum / (2.0 * static_cast<double>(impl.sizes.size()));
}

double best_schedule_over_mpi(const std::vector<ImplResult>& impls, size_t size) {
  double mpi = 0, best = 0;
  for (const ImplResult& impl : impls) {
    if (size >= impl.sizes.size()) continue;
    const double busbw = impl.sizes[size].out_of_place.busbw_GBps;
    if (impl.name == "mpi")
      mpi = busbw;
    else if (!impl.transport.empty() && impl.transport != "nccl")  // a schedule on host buffers
      best = std::max(best, busbw);
  }
  return mpi > 0 && best > 0 ? best / mpi : 0;
}

void print_summary(std::FILE* out, const std::vector<ImplResult>& impls) {
  if (impls.size() < 2) return;
  // Every column as wide as the longest name (rabenseifner@shm), so that the columns line up.
  int width = 12;
  for (const ImplResult& impl : impls) width = std::max(width, static_cast<int>(impl.name.size()));
  std::fprintf(out, "# Summary: out-of-place busbw (GB/s) per implementation\n# %12s", "size");
  for (const ImplResult& impl : impls) std::fprintf(out, "  %*s", width, impl.name.c_str());
  std::fprintf(out, "  %12s\n", "best/mpi");
  for (size_t i = 0; i < impls.front().sizes.size(); ++i) {
    std::fprintf(out, "  %12llu", static_cast<unsigned long long>(impls.front().sizes[i].bytes));
    for (const ImplResult& impl : impls)
      std::fprintf(out, "  %*.2f", width, i < impl.sizes.size() ? impl.sizes[i].out_of_place.busbw_GBps : 0.0);
    const double ratio = best_schedule_over_mpi(impls, i);
    if (ratio > 0)
      std::fprintf(out, "  %11.2fx\n", ratio);
    else
      std::fprintf(out, "  %12s\n", "-");
  }
  std::fflush(out);
}

void print_table_footer(std::FILE* out, const ImplResult& impl) {
  const int64_t wrong = total_wrong(impl);
  std::fprintf(out, "# Out of bounds values : %lld %s\n", static_cast<long long>(wrong),
               wrong == 0 ? "OK" : "FAILED");
  std::fprintf(out, "# Avg bus bandwidth    : %g \n", average_busbw(impl));
  std::fprintf(out, "#\n");
  std::fflush(out);
}

}  // namespace sb
