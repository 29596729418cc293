#pragma once
// The number formats a plan computes in.
#include <optional>
#include <string_view>

namespace symtensor::hardware {

// fp8: FP8 with per-tensor scales (Transformer Engine's current or delayed scaling); mxfp8:
// FP8 with a power-of-two scale per 32 values (Blackwell), at the fp8 peak; fp4: NVFP4.
enum class Precision { fp32, tf32, fp16, bf16, fp8, fp4, mxfp8 };
std::string_view to_string(Precision p);
std::optional<Precision> parse_precision(std::string_view text);
// Only the linear layers' GEMMs run in these (Transformer Engine's recipes).
bool is_low_precision(Precision p);
// The peak a precision runs at (mxfp8 at fp8's).
Precision peak_precision(Precision p);

}  // namespace symtensor::hardware
