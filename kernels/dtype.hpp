#pragma once
// The element types and reduction operations of the collectives, with their names as nccl-tests
// spells them, and a dispatcher that turns a runtime DataType into a C++ type.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kernels/float16.hpp"

namespace sb {

enum class DataType { float32, float64, float16, bfloat16, int32, int8 };
enum class RedOp { sum, prod, max, min, avg };

inline constexpr DataType kAllDataTypes[] = {DataType::float32, DataType::float64,
                                             DataType::float16, DataType::bfloat16,
                                             DataType::int32,   DataType::int8};
inline constexpr RedOp kAllRedOps[] = {RedOp::sum, RedOp::prod, RedOp::max, RedOp::min,
                                       RedOp::avg};

size_t size_of(DataType type);
bool is_floating(DataType type);
// Names as nccl-tests prints them: float, double, half, bfloat16, int32, int8; sum, prod, ...
std::string_view name_of(DataType type);
std::string_view name_of(RedOp op);
// Accepts those names and common aliases (fp32, float32, fp16, float16, bf16, int, char ...).
// Throws UsageError on anything else.
DataType parse_datatype(std::string_view text);
RedOp parse_redop(std::string_view text);

// Calls f(T{}) with T the C++ type that stores `type`.
template <class F>
decltype(auto) dispatch(DataType type, F&& f) {
  switch (type) {
    case DataType::float32: return f(float{});
    case DataType::float64: return f(double{});
    case DataType::float16: return f(sb::float16{});
    case DataType::bfloat16: return f(sb::bfloat16{});
    case DataType::int32: return f(int32_t{});
    case DataType::int8: break;
  }
  return f(int8_t{});
}

}  // namespace sb
