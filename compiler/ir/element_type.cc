#include "compiler/ir/element_type.h"

namespace symtensor::compiler {

std::size_t element_size(ElementType t) {
  switch (t) {
    case ElementType::u8: case ElementType::i8: case ElementType::boolean: return 1;
    case ElementType::u16: case ElementType::i16: case ElementType::f16: case ElementType::bf16: return 2;
    case ElementType::i32: case ElementType::u32: case ElementType::f32: return 4;
    case ElementType::i64: case ElementType::u64: case ElementType::f64: case ElementType::c64: return 8;
    case ElementType::c128: return 16;
    case ElementType::undefined: case ElementType::string: return 0;
  }
  return 0;
}

std::string_view to_string(ElementType t) {
  switch (t) {
    case ElementType::undefined: return "undefined";
    case ElementType::f32: return "float32";
    case ElementType::u8: return "uint8";
    case ElementType::i8: return "int8";
    case ElementType::u16: return "uint16";
    case ElementType::i16: return "int16";
    case ElementType::i32: return "int32";
    case ElementType::i64: return "int64";
    case ElementType::string: return "string";
    case ElementType::boolean: return "bool";
    case ElementType::f16: return "float16";
    case ElementType::f64: return "float64";
    case ElementType::u32: return "uint32";
    case ElementType::u64: return "uint64";
    case ElementType::c64: return "complex64";
    case ElementType::c128: return "complex128";
    case ElementType::bf16: return "bfloat16";
  }
  return "unknown";
}

bool is_floating(ElementType t) {
  return t == ElementType::f32 || t == ElementType::f16 || t == ElementType::bf16 || t == ElementType::f64;
}

}  // namespace symtensor::compiler
