#include "collectives/mpi_types.hpp"

#include <array>

#include "common/check.hpp"
#include "kernels/reduce.hpp"

namespace sb {
namespace {

// inout = combine(inout, in), through the host's reduction (fp16/bf16 widened, combined and
// rounded at vector speed): combine()'s bits element by element, but for which of two NaN
// operands passes on (kernels/reduce_cpu.cpp).
template <DataType Type, RedOp Op>
void reduce_16bit(void* in, void* inout, int* len, MPI_Datatype*) {
  reduce_into_cpu(inout, in, static_cast<size_t>(*len), Type, Op);
}

template <DataType Type>
std::array<MPI_Op, 5> create_16bit_ops() {
  std::array<MPI_Op, 5> ops{};
  // All five are commutative; avg reduces as a sum.
  SB_MPI_CHECK(MPI_Op_create(&reduce_16bit<Type, RedOp::sum>, 1, &ops[0]));
  SB_MPI_CHECK(MPI_Op_create(&reduce_16bit<Type, RedOp::prod>, 1, &ops[1]));
  SB_MPI_CHECK(MPI_Op_create(&reduce_16bit<Type, RedOp::max>, 1, &ops[2]));
  SB_MPI_CHECK(MPI_Op_create(&reduce_16bit<Type, RedOp::min>, 1, &ops[3]));
  ops[4] = ops[0];
  return ops;
}

size_t op_index(RedOp op) { return static_cast<size_t>(op); }

}  // namespace

MPI_Datatype mpi_datatype(DataType type) {
  switch (type) {
    case DataType::float32: return MPI_FLOAT;
    case DataType::float64: return MPI_DOUBLE;
    case DataType::float16:
    case DataType::bfloat16: return MPI_UINT16_T;
    case DataType::int32: return MPI_INT32_T;
    case DataType::int8: return MPI_INT8_T;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op mpi_op(DataType type, RedOp op) {
  if (type == DataType::float16) {
    static const std::array<MPI_Op, 5> ops = create_16bit_ops<DataType::float16>();
    return ops[op_index(op)];
  }
  if (type == DataType::bfloat16) {
    static const std::array<MPI_Op, 5> ops = create_16bit_ops<DataType::bfloat16>();
    return ops[op_index(op)];
  }
  switch (op) {
    case RedOp::sum:
    case RedOp::avg: return MPI_SUM;
    case RedOp::prod: return MPI_PROD;
    case RedOp::max: return MPI_MAX;
    case RedOp::min: return MPI_MIN;
  }
  return MPI_OP_NULL;
}

}  // namespace sb
