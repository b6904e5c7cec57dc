#pragma once
// The data every allreduce is checked with. Each rank's value at each element depends on the rank
// and the element, and values are small integers chosen so that every partial result, in any
// order of combination, is exactly representable in the datatype: the result can then be checked
// bit-exactly against a naive fold over all ranks, whatever algorithm produced it.
//
// Per datatype there is a limit L below which all integers are exact (fp16 2048, bf16 256,
// int8 127, ...). For sum, a rank's values are bounded by L/p; for avg they are multiples of p
// bounded by L/p^2 (so the division is exact too); for prod at most log2(L) ranks contribute a 2
// per element and the rest +-1; max and min use values in [-100, 100]. When p is so large that
// the bound falls below 1, only every stride-th rank contributes a nonzero value per element.
#include <cstddef>

#include "kernels/dtype.hpp"

namespace sb {

// The value rank `rank` of `nranks` contributes at `index`.
double check_input_value(DataType type, RedOp op, int rank, int nranks, size_t index);
// The exact result of the allreduce at `index`: the naive fold of every rank's input.
double check_expected_value(DataType type, RedOp op, int nranks, size_t index);

// Writes this rank's input for elements [first, first + count) into a host buffer.
void fill_check_input(void* buffer, size_t count, DataType type, RedOp op, int rank, int nranks,
                      size_t first = 0);
// Writes the expected result for elements [first, first + count) into a host buffer.
void fill_check_expected(void* buffer, size_t count, DataType type, RedOp op, int nranks,
                         size_t first = 0);
// Counts the elements of `result` that differ from `expected` (as written by
// fill_check_expected), with the tolerance described below.
size_t count_mismatches(const void* result, const void* expected, size_t count, DataType type,
                        RedOp op);
// Counts the elements of a host buffer that differ from the expected result. Exact everywhere
// except avg on floating types, which may be computed as a sum of inputs premultiplied by 1/p
// (as NCCL does) and is allowed two units in the last place.
size_t count_wrong(const void* result, size_t count, DataType type, RedOp op, int nranks,
                   size_t first = 0);

}  // namespace sb
