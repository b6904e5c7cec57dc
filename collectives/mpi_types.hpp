#pragma once
// MPI's names for our datatypes and operations. MPI has no 16-bit float types and no average:
// fp16 and bf16 travel as 16-bit integers under user-defined operations that reduce them through
// kernels/reduce.hpp, and avg is a sum finished by a local division (see mpi_allreduce.cpp).
#include <mpi.h>

#include "kernels/dtype.hpp"

namespace sb {

MPI_Datatype mpi_datatype(DataType type);
// The MPI_Op for `op` on `type`; avg maps to the sum. Created on first use, valid until
// MPI_Finalize.
MPI_Op mpi_op(DataType type, RedOp op);

}  // namespace sb
