#pragma once
// Which precision each operator's kernel runs in under a plan's precision. Transformer Engine
// runs only the linear layers' GEMMs (an operand is a weight) in FP8 or FP4; attention,
// normalizations and element-wise ops stay bf16 (CALIBRATION.md section 5). Megatron's
// output layer (the LM head, outside the layers) is not a TE module: bf16.
#include "compiler/cost/numeric_graph.h"
#include "hardware/precision.h"

namespace symtensor::compiler {

bool runs_low_precision_gemm(const NumericGraph& ng, NodeId id, hardware::Precision plan_precision);
hardware::Precision kernel_precision(const NumericGraph& ng, NodeId id, hardware::Precision plan_precision);

// Bytes per element of the activations a plan moves and keeps: 16-bit unless it computes in
// fp32; low-precision recipes keep them in bf16 (only the linear GEMMs' inputs are quantized).
double activation_bytes(hardware::Precision plan_precision);

}  // namespace symtensor::compiler
