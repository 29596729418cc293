#pragma once
// An import canonicalization: attention whose heads are merged with the batch in one dim,
// as PyTorch's nn.MultiheadAttention writes it, gets its heads as a dim of their own.
//
// PyTorch reshapes q, k and v [seq, batch, heads*d] -> [seq, batch*heads, d] (row-major:
// the merged index is b*heads + h, heads inner), transposes to [batch*heads, seq, d],
// attends batched over that merged dim and transposes and reshapes back. A contiguous cut
// of the merged dim is a cut of the batch, never of the heads, so Megatron's heads cut has
// nothing to cut. Here each such Reshape targets [seq, batch, heads, d] instead, and every
// tensor downstream of it up to the Reshapes that leave the merged layout carries the
// merged dim as the two dims [batch, heads] (a Transpose's perm and a Softmax's axis
// renumbered). Row-major, [.., batch*heads, ..] and [.., batch, heads, ..] hold the same
// elements in the same order, so the graph computes exactly the same function and the
// leaving Reshapes (targets without copied 0 dims) read the same data.
//
// A candidate is a Reshape [A, B, E] -> [A, B*H, D] with H = E / D an integer > 1. The
// merged dim is followed forward through Transpose (perm given), MatMul (the merged dim a
// batch dim of both operands, or the other operand of rank <= 2), element-wise operators
// (other operands not reaching the merged dim by broadcasting), Softmax / LogSoftmax (not
// over the merged dim), Cast, Identity and Dropout (its mask unread), to Reshapes. The
// candidates reached together (q, k, v of one attention) form one region; a region with
// any other reader of a merged tensor (a Shape, a Gather, a graph output), a Reshape whose
// input is already four-dimensional (heads outer: [A, H, B, D] -> [A, H*B, D]), or
// candidates that disagree on B or H is left as it is.
//
// Node ids and order are kept (the ONNX rewrite writes the model's own nodes by index):
// only Reshape targets (a new constant tensor each), attributes and shapes change; the
// shape sub-graphs that computed the old targets are left unread.
#include <string>

#include "compiler/ir/graph.h"

namespace symtensor::compiler {

struct MergedHeadsSummary {
  int regions = 0;      // attention regions rewritten (one per attention layer)
  std::string example;  // "[seq, batch*4, 8] -> [seq, batch, 4, 8] at '/encoder/layers.0/self_attn/Reshape'"
};

MergedHeadsSummary split_merged_heads(Graph& graph);

}  // namespace symtensor::compiler
