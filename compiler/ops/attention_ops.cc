// ai.symtensor FusedAttention: softmax(Q·Kᵀ·scale + mask)·V as one kernel, the operator the
// fusion pass (compiler/fusion) puts in place of MatMul, scale, mask, Softmax, MatMul.
//
// Inputs: Q [B..., sq, d], Kᵀ [B..., d, sk], V [B..., sk, dv], optional additive mask
// broadcastable to [B..., sq, sk] (batch dims broadcast as MatMul's: grouped-query attention
// passes K and V with a size-1 repeat dim). Attribute `causal` = 1 when the mask was a causal
// mask: the kernel skips the masked blocks and reads no mask.
//
// Loops: the batch dims, sq, sk (reduction), d (reduction), dv. Both reductions are under
// the softmax, so neither can be cut into partial sums; a cut of sq is context parallelism
// (K and V are needed whole along sk by every piece of sq).
// FLOPs: the two matrix products, 2·B·sq·sk·(d + dv), halved when causal (as the
// FlashAttention papers count); the softmax's exponentials are not counted, as they do not.
// Bytes: Q, K, V and the output once (no s² tensor reaches HBM), plus a non-causal mask.
#include <stdexcept>

#include "compiler/ops/op_families.h"
#include "compiler/ops/op_helpers.h"

namespace symtensor::compiler {
namespace {

using namespace ops;

struct AttentionDims {
  Shape batch, q_batch, k_batch, v_batch;
  GiNaC::ex sq, sk, d, dv;
};

Shape leading(const Shape& s) { return Shape(s.begin(), s.end() - 2); }

AttentionDims attention_dims(const OpContext& ctx) {
  const Shape& q = input_shape(ctx, 0);
  const Shape& k = input_shape(ctx, 1);
  const Shape& v = input_shape(ctx, 2);
  if (q.size() < 3 || k.size() != q.size() || v.size() != q.size())
    throw std::runtime_error("FusedAttention: Q, K and V must have the same rank >= 3");
  AttentionDims a;
  a.sq = q[q.size() - 2];
  a.d = q.back();
  a.sk = k.back();
  a.dv = v.back();
  if (!same_extent(k[k.size() - 2], a.d)) throw std::runtime_error("FusedAttention: K's head dim differs from Q's");
  if (!same_extent(v[v.size() - 2], a.sk)) throw std::runtime_error("FusedAttention: V's sequence differs from K's");
  a.q_batch = leading(q), a.k_batch = leading(k), a.v_batch = leading(v);
  a.batch = broadcast_shapes({a.q_batch, a.k_batch, a.v_batch});
  return a;
}

std::vector<OutputInfo> attention_infer(const OpContext& ctx) {
  AttentionDims a = attention_dims(ctx);
  Shape out = a.batch;
  out.push_back(a.sq);
  out.push_back(a.dv);
  return {output(input(ctx, 0).dtype, out)};
}

IterationSpace attention_space(const OpContext& ctx) {
  AttentionDims a = attention_dims(ctx);
  IterationSpace s;
  s.kind = OpKind::attention;
  for (std::size_t i = 0; i < a.batch.size(); ++i) add_indexed_loop(s, "b", i, a.batch[i]);
  const int sq = add_loop(s, "sq", a.sq);
  const int sk = add_loop(s, "sk", a.sk, /*reduction=*/true);
  const int d = add_loop(s, "d", a.d, /*reduction=*/true);
  const int dv = add_loop(s, "dv", a.dv);
  auto with = [](std::vector<int> dims, std::initializer_list<int> tail) {
    dims.insert(dims.end(), tail);
    return dims;
  };
  s.input_dims.push_back(with(broadcast_dim_map(a.q_batch, a.batch), {sq, d}));
  s.input_dims.push_back(with(broadcast_dim_map(a.k_batch, a.batch), {d, sk}));
  s.input_dims.push_back(with(broadcast_dim_map(a.v_batch, a.batch), {sk, dv}));
  const bool causal = ctx.node.attr_int("causal", 0) != 0;
  GiNaC::ex bytes = tensor_bytes(input(ctx, 0)) + tensor_bytes(input(ctx, 1)) + tensor_bytes(input(ctx, 2));
  if (has_input(ctx, 3)) {
    Shape scores = a.batch;
    scores.push_back(a.sq);
    scores.push_back(a.sk);
    std::vector<int> mask = broadcast_dim_map(input_shape(ctx, 3), scores);
    for (int& m : mask) {
      if (m < 0) continue;
      m = m < static_cast<int>(a.batch.size()) ? m : (m == static_cast<int>(a.batch.size()) ? sq : sk);
    }
    s.input_dims.push_back(mask);
    if (!causal) bytes += tensor_bytes(input(ctx, 3));
  }
  std::vector<int> out = identity_dims(a.batch.size());
  out.push_back(sq);
  out.push_back(dv);
  s.output_dims = {out};
  s.flops = 2 * product(a.batch) * a.sq * a.sk * (a.d + a.dv) * (causal ? GiNaC::ex(GiNaC::numeric(1, 2)) : GiNaC::ex(1));
  if (has_output(ctx, 0)) bytes += tensor_bytes(*ctx.outputs[0]);
  s.bytes = bytes;
  return s;
}

}  // namespace

void register_attention_ops(OpRegistry& registry) {
  registry.add("ai.symtensor", "FusedAttention", {attention_infer, attention_space});
}

}  // namespace symtensor::compiler
