#pragma once
// Attention as exporters write it: MatMul(Q, Kᵀ) -> [Div|Mul by a constant] -> [Add mask |
// Where(mask, ., -inf)] -> Softmax(last axis) -> MatMul(., V), scale and mask in either order,
// every intermediate read only by the next step. Grouped-query attention's broadcast K/V
// (a size-1 repeat dim) is MatMul's batch broadcasting and needs nothing special. A mask
// built by comparing positions (Greater/Less of the same positions on two axes) or by
// Trilu is causal: the fused kernel skips it and reads no mask. A causal mask Or'ed with
// "query - key >= w" of the same positions (Mistral's, Gemma 3's and gpt-oss's sliding window)
// is causal with attribute window = w: the kernel visits the last w keys of each query.
// Attention sinks (gpt-oss): the masked scores concatenated with a per-head logit column
// (Concat on the last axis, the column through its Expand), the row max subtracted
// (Sub(a, ReduceMax(a))), Softmax, the column dropped (Slice [0, -1) of the last axis), P·V:
// one FusedAttention whose input 4 is the per-head logits (input 3, the mask, then empty).
#include <cstdint>
#include <optional>

#include "compiler/fusion/graph_splice.h"

namespace symtensor::compiler {

PatternResult match_attention(const Graph& graph);

// True when `mask` is a causal mask (see above); exposed for tests.
bool is_causal_mask(const Graph& graph, TensorId mask);

// The window w of a sliding-window causal mask (see above), or nullopt; exposed for tests.
std::optional<std::int64_t> sliding_window_of(const Graph& graph, TensorId mask);

}  // namespace symtensor::compiler
