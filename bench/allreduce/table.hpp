#pragma once
// sb-allreduce's stdout: nccl-tests' layout, so that parsers written for it keep working.
#include <cstdio>
#include <string>
#include <vector>

#include "bench/allreduce/options.hpp"
#include "bench/allreduce/sweep.hpp"
#include "common/mpi_env.hpp"

namespace sb {

void print_run_header(std::FILE* out, const AllreduceOptions& options, const WorldLayout& layout,
                      const std::vector<int>& pids);
void print_table_header(std::FILE* out, const ImplResult& impl);
void print_table_row(std::FILE* out, const SizeResult& size, const AllreduceOptions& options);
// "# Out of bounds values : N OK|FAILED" and "# Avg bus bandwidth : X" over both placements.
void print_table_footer(std::FILE* out, const ImplResult& impl);

// When more than one implementation ran: per size, each one's out-of-place busbw, and the best
// schedule's busbw over MPI_Allreduce's when both ran.
void print_summary(std::FILE* out, const std::vector<ImplResult>& impls);
// The best schedule's busbw over the `mpi` baseline's at size index `size`; 0 when either is
// missing. The schedules compared are those on host buffers (transport mpi or shm).
double best_schedule_over_mpi(const std::vector<ImplResult>& impls, size_t size);

// The row's text, without the newline (tested).
std::string format_table_row(const SizeResult& size, const AllreduceOptions& options);
// Sum of #wrong over sizes and placements (unchecked ones count 0).
int64_t total_wrong(const ImplResult& impl);
// Mean busbw over every size and both placements, as nccl-tests' "Avg bus bandwidth".
double average_busbw(const ImplResult& impl);

}  // namespace sb
