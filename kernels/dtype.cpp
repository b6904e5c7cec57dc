#include "kernels/dtype.hpp"

#include "common/usage_error.hpp"

namespace sb {

size_t size_of(DataType type) {
  return dispatch(type, [](auto value) { return sizeof value; });
}

bool is_floating(DataType type) { return type != DataType::int32 && type != DataType::int8; }

std::string_view name_of(DataType type) {
  switch (type) {
    case DataType::float32: return "float";
    case DataType::float64: return "double";
    case DataType::float16: return "half";
    case DataType::bfloat16: return "bfloat16";
    case DataType::int32: return "int32";
    case DataType::int8: return "int8";
  }
  return "?";
}

std::string_view name_of(RedOp op) {
  switch (op) {
    case RedOp::sum: return "sum";
    case RedOp::prod: return "prod";
    case RedOp::max: return "max";
    case RedOp::min: return "min";
    case RedOp::avg: return "avg";
  }
  return "?";
}

DataType parse_datatype(std::string_view text) {
  struct Alias {
    std::string_view name;
    DataType type;
  };
  static constexpr Alias kAliases[] = {
      {"float", DataType::float32},   {"float32", DataType::float32}, {"fp32", DataType::float32},
      {"double", DataType::float64},  {"float64", DataType::float64}, {"fp64", DataType::float64},
      {"half", DataType::float16},    {"float16", DataType::float16}, {"fp16", DataType::float16},
      {"bfloat16", DataType::bfloat16}, {"bf16", DataType::bfloat16},
      {"int32", DataType::int32},     {"int", DataType::int32},
      {"int8", DataType::int8},       {"char", DataType::int8},
  };
  for (const Alias& alias : kAliases)
    if (alias.name == text) return alias.type;
  throw UsageError("--datatype: unknown type '" + std::string(text) +
                   "' (float, double, half, bfloat16, int32, int8)");
}

RedOp parse_redop(std::string_view text) {
  for (RedOp op : kAllRedOps)
    if (name_of(op) == text) return op;
  throw UsageError("--op: unknown operation '" + std::string(text) +
                   "' (sum, prod, max, min, avg)");
}

}  // namespace sb
