// ai.symtensor MoeDispatch and MoeCombine: a mixture of experts' token exchange as the
// fusion pass (compiler/fusion/moe_pattern.h) puts it in place of the two routing einsums
// that GShard-style capacity routing writes:
//
//   MoeDispatch(dispatch [b,s,E,C], x [b,s,h]) -> [b,E,C,h]   Einsum("bsec,bsh->bech")
//   MoeCombine(combine [b,s,E,C], y [b,E,C,h]) -> [b,s,h]     Einsum("bsec,bech->bsh")
//
// The node keeps the einsum's `equation` (routing operand first), so loops and operand
// maps are the einsum's: cutting E is expert parallelism, and a token tensor cut on the
// batch loop meeting one cut on E over the same axis is an all-to-all. What differs is the
// cost, that of a token dispatcher (Megatron-Core's permute / unpermute) rather than of a
// dense contraction with a one-hot tensor:
// - MoeDispatch: 0 FLOPs (a permutation); bytes = the routed token rows read and written,
//   2·b·E·C·h elements.
// - MoeCombine: 2·top_k·h FLOPs per token (each token's k expert outputs weighted and
//   summed; attribute `top_k`, else 2·E·C·h per sequence), bytes = the expert outputs read
//   plus the tokens written, (b·E·C·h + b·s·h) elements.
// The routing tensors are index-sized in a real kernel, so their bytes are not counted.
#include <stdexcept>

#include "compiler/ops/op_families.h"
#include "compiler/ops/op_helpers.h"

namespace symtensor::compiler {
namespace {

using namespace ops;

// The einsum's space, checked to have the routing form: operand 0 rank 4, operand 1 and
// the output rank 3 or 4.
IterationSpace routed_einsum_space(const OpContext& ctx, const char* op) {
  if (ctx.inputs.size() != 2 || input_shape(ctx, 0).size() != 4)
    throw std::runtime_error(std::string(op) + ": expects a [b, s, E, C] routing tensor and a token tensor");
  IterationSpace s = einsum_space(ctx);
  s.kind = OpKind::routing;
  return s;
}

IterationSpace dispatch_space(const OpContext& ctx) {
  IterationSpace s = routed_einsum_space(ctx, "MoeDispatch");
  s.flops = 0;
  const Shape& out = output_shape(ctx, 0);  // [b, E, C, h]
  s.bytes = 2 * product(out) * static_cast<long>(element_size(input(ctx, 1).dtype));
  return s;
}

IterationSpace combine_space(const OpContext& ctx) {
  IterationSpace s = routed_einsum_space(ctx, "MoeCombine");
  const Shape& expert_out = input_shape(ctx, 1);  // [b, E, C, h]
  const Shape& out = output_shape(ctx, 0);        // [b, s, h]
  const std::int64_t top_k = ctx.node.attr_int("top_k", 0);
  s.flops = top_k > 0 ? 2 * static_cast<long>(top_k) * product(out) : 2 * product(expert_out);
  s.bytes = (product(expert_out) + product(out)) * static_cast<long>(element_size(input(ctx, 1).dtype));
  return s;
}

}  // namespace

void register_routing_ops(OpRegistry& registry) {
  registry.add("ai.symtensor", "MoeDispatch", {einsum_infer, dispatch_space});
  registry.add("ai.symtensor", "MoeCombine", {einsum_infer, combine_space});
}

}  // namespace symtensor::compiler
