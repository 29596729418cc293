#pragma once
// Attention as exporters write it: MatMul(Q, Kᵀ) -> [Div|Mul by a constant] -> [Add mask |
// Where(mask, ., -inf)] -> Softmax(last axis) -> MatMul(., V), scale and mask in either order,
// every intermediate read only by the next step. Grouped-query attention's broadcast K/V
// (a size-1 repeat dim) is MatMul's batch broadcasting and needs nothing special. A mask
// built by comparing positions (Greater/Less of the same positions on two axes) or by
// Trilu is causal: the fused kernel skips it and reads no mask.
#include "compiler/fusion/graph_splice.h"

namespace symtensor::compiler {

PatternResult match_attention(const Graph& graph);

// True when `mask` is a causal mask (see above); exposed for tests.
bool is_causal_mask(const Graph& graph, TensorId mask);

}  // namespace symtensor::compiler
