#pragma once
// One registration function per op family; registry.cc calls them in order.
#include "compiler/ops/op_semantics.h"

namespace symtensor::compiler {

void register_matmul_ops(OpRegistry& registry);         // MatMul, Gemm, Einsum
void register_attention_ops(OpRegistry& registry);      // FusedAttention, com.microsoft (GroupQuery|MultiHead)Attention
void register_routing_ops(OpRegistry& registry);        // ai.symtensor MoeDispatch, MoeCombine
void register_conv_ops(OpRegistry& registry);           // Conv, ConvTranspose
void register_elementwise_ops(OpRegistry& registry);    // unary, binary, Where, Clip, Cast ...
void register_normalization_ops(OpRegistry& registry);  // Softmax, LayerNorm, BatchNorm ...
void register_reduction_ops(OpRegistry& registry);      // ReduceX, ArgMax/ArgMin, TopK, CumSum
void register_shape_ops(OpRegistry& registry);          // Reshape, Transpose, Concat, Slice ...
void register_shape_source_ops(OpRegistry& registry);    // Shape, Size, Constant*, Range, Expand, Tile, Pad
void register_gather_scatter_ops(OpRegistry& registry); // Gather*, Scatter*, OneHot, NonZero
void register_pooling_ops(OpRegistry& registry);        // MaxPool, AveragePool, Global*, Resize

}  // namespace symtensor::compiler
