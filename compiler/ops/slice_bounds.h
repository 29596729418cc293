#pragma once
// Slice bounds on one axis: ONNX's clamping for numbers, and the common symbolic forms
// (negative indices from the end, INT_MAX "to the end", full reversal).
#include <cstdint>
#include <optional>

#include "hardware/symbolic.h"

namespace symtensor::compiler::ops {

struct SliceAxis {
  int axis = 0;
  std::int64_t step = 1;
  GiNaC::ex extent;                           // elements kept
  std::optional<std::int64_t> numeric_start;  // first index kept, when it is a number
};

// Fills a.extent and a.numeric_start for a slice [start, end) with a.step over `dim`;
// throws for a symbolic negative-step slice other than a full reversal.
void resolve_slice(const GiNaC::ex& dim, const GiNaC::ex& start, const GiNaC::ex& end, SliceAxis& a);

}  // namespace symtensor::compiler::ops
