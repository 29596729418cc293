#pragma once
#include <cstddef>
#include <string_view>

namespace symtensor::compiler {

// Values are ONNX's TensorProto.DataType numbers, so conversion is a cast.
enum class ElementType : int {
  undefined = 0, f32 = 1, u8 = 2, i8 = 3, u16 = 4, i16 = 5, i32 = 6, i64 = 7, string = 8,
  boolean = 9, f16 = 10, f64 = 11, u32 = 12, u64 = 13, c64 = 14, c128 = 15, bf16 = 16,
};

std::size_t element_size(ElementType t);  // bytes; 0 for undefined/string
std::string_view to_string(ElementType t);
bool is_floating(ElementType t);

}  // namespace symtensor::compiler
