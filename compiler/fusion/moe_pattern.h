#pragma once
// A mixture of experts' token exchange as GShard-style capacity routing writes it: two
// Einsums whose first (or second) operand is a [b, s, E, C] routing tensor derived from a
// TopK of router logits:
//   dispatch  Einsum("bsec,bsh->bech")  tokens into E expert buffers of C slots
//   combine   Einsum("bsec,bech->bsh")  expert outputs back to the tokens, gate-weighted
// (any letters, the roles matched by position). They become ai.symtensor MoeDispatch /
// MoeCombine (compiler/ops/routing_ops.cc): the same loops, the routing operand first,
// attribute `top_k` from the TopK (and, under group-limited routing, `expert_groups` and
// `top_groups` from the TopK over group scores before it), and the costs of a token dispatcher instead of a
// dense one-hot contraction. The expert GEMMs between them stay Einsums over [b, E, C, h].
#include "compiler/fusion/graph_splice.h"

namespace symtensor::compiler {

PatternResult match_moe(const Graph& graph);

}  // namespace symtensor::compiler
