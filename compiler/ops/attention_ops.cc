// ai.symtensor FusedAttention: softmax(Q·Kᵀ·scale + mask)·V as one kernel, the operator the
// fusion pass (compiler/fusion) puts in place of MatMul, scale, mask, Softmax, MatMul.
//
// Inputs: Q [B..., sq, d], Kᵀ [B..., d, sk], V [B..., sk, dv], optional additive mask
// broadcastable to [B..., sq, sk] (batch dims broadcast as MatMul's: grouped-query attention
// passes K and V with a size-1 repeat dim). Attribute `causal` = 1 when the mask was a causal
// mask: the kernel skips the masked blocks and reads no mask. Attribute `window` = w (with
// causal; Mistral's, Gemma 3's and gpt-oss's sliding window): a query sees its last w keys
// only. Optional input 4 (input 3 then empty when causal): attention sinks, gpt-oss's
// per-head logit broadcastable to [B..., sq, 1] that joins each row's softmax denominator.
//
// Loops: the batch dims, sq, sk (reduction), d (reduction), dv. Both reductions are under
// the softmax, so neither can be cut into partial sums; a cut of sq is context parallelism
// (K and V are needed whole along sk by every piece of sq).
// FLOPs: the two matrix products, 2·B·sq·sk·(d + dv), halved when causal (as the
// FlashAttention papers count); the softmax's exponentials are not counted, as they do not.
// In a window of w keys: 2·B·(sq·w - w²/2)·(d + dv), the causal triangle cut to a band of
// width w (equal to the causal count at sq = w); when sq is bound below w, the causal count.
// A sink adds one logit to a row: no FLOPs counted.
// Bytes: Q, K, V and the output once (no s² tensor reaches HBM), plus a non-causal mask and
// the sinks (the fusion passes them before their broadcast: one value a head).
// ONNX Runtime's com.microsoft MultiHeadAttention and GroupQueryAttention are priced the
// same way (below): a model that already has them needs no fusion.
#include <optional>
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
  } else if (has_input(ctx, 4)) {
    s.input_dims.emplace_back();  // no mask
  }
  if (has_input(ctx, 4)) {
    // The sinks: their batch dims map to the batch loops (the heads), sq's to sq, the sink
    // column to none.
    const std::size_t nb = a.batch.size();
    Shape column = a.batch;
    column.push_back(a.sq);
    column.push_back(GiNaC::ex(1));
    std::vector<int> sinks = broadcast_dim_map(input_shape(ctx, 4), column);
    for (int& m : sinks) {
      if (m < 0) continue;
      m = m < static_cast<int>(nb) ? m : (m == static_cast<int>(nb) ? sq : -1);
    }
    s.input_dims.push_back(sinks);
    bytes += tensor_bytes(input(ctx, 4));
  }
  std::vector<int> out = identity_dims(a.batch.size());
  out.push_back(sq);
  out.push_back(dv);
  s.output_dims = {out};
  s.flops = 2 * product(a.batch) * a.sq * a.sk * (a.d + a.dv) * (causal ? GiNaC::ex(GiNaC::numeric(1, 2)) : GiNaC::ex(1));
  const std::int64_t window = causal ? ctx.node.attr_int("window", 0) : 0;
  if (window > 0) {
    const GiNaC::ex w = GiNaC::numeric(window);
    const std::optional<double> sq = ctx.symbols.evaluate(a.sq);
    if (!sq || *sq > static_cast<double>(window))
      s.flops = 2 * product(a.batch) * (a.sq * w - w * w / 2) * (a.d + a.dv);
  }
  if (has_output(ctx, 0)) bytes += tensor_bytes(*ctx.outputs[0]);
  s.bytes = bytes;
  return s;
}

// ---- ONNX Runtime's fused attention (com.microsoft MultiHeadAttention, GroupQueryAttention)
// on packed [B, S, heads·d] query, key and value: loops b, h, sq, sk, d, dv as above, the
// packed dims mapped to the heads loop (their outer factor; GroupQueryAttention's K and V
// pack its kv heads, which a heads cut divides alike). Other inputs (masks, past K/V,
// sequence lengths) are read whole. GroupQueryAttention is causal.
std::optional<IterationSpace> packed_attention_space(const OpContext& ctx, bool grouped) {
  if (!has_input(ctx, 0) || !has_input(ctx, 1) || !has_input(ctx, 2) || !has_output(ctx, 0)) return std::nullopt;
  const Shape& q = input_shape(ctx, 0);
  const Shape& k = input_shape(ctx, 1);
  const Shape& v = input_shape(ctx, 2);
  if (q.size() != 3 || k.size() != 3 || v.size() != 3) return std::nullopt;
  const std::int64_t heads = ctx.node.attr_int("num_heads", 0);
  if (heads < 1) return std::nullopt;
  IterationSpace s;
  s.kind = OpKind::attention;
  const int b = add_loop(s, "b", q[0]);
  const int h = add_loop(s, "h", GiNaC::ex(static_cast<long>(heads)));
  const int sq = add_loop(s, "sq", q[1]);
  const int sk = add_loop(s, "sk", k[1], /*reduction=*/true);
  const GiNaC::ex d = simplify(q[2] / heads);
  add_loop(s, "d", d, /*reduction=*/true);
  const std::int64_t kv_heads = grouped ? ctx.node.attr_int("kv_num_heads", heads) : heads;
  const GiNaC::ex dv = simplify(v[2] / kv_heads);
  add_loop(s, "dv", dv);
  s.input_dims = {{b, sq, h}, {b, sk, h}, {b, sk, h}};
  for (std::size_t i = 3; i < ctx.inputs.size(); ++i)
    s.input_dims.emplace_back(ctx.inputs[i] ? ctx.inputs[i]->shape.size() : 0, -1);
  s.output_dims.push_back({b, sq, h});
  for (std::size_t o = 1; o < ctx.outputs.size(); ++o)
    s.output_dims.emplace_back(ctx.outputs[o] ? ctx.outputs[o]->shape.size() : 0, -1);
  const bool causal = grouped || ctx.node.attr_int("unidirectional", 0) != 0;
  s.flops = 2 * q[0] * heads * q[1] * k[1] * (d + dv) * (causal ? GiNaC::ex(GiNaC::numeric(1, 2)) : GiNaC::ex(1));
  s.bytes = io_bytes(ctx);
  return s;
}

// Output [B, S, heads·dv]; present K/V (when asked for) the past's [B, kv, P, d] grown by
// this call's S keys.
std::vector<OutputInfo> packed_attention_infer(const OpContext& ctx, bool grouped) {
  const Shape& q = input_shape(ctx, 0);
  if (q.size() != 3) throw std::runtime_error(ctx.node.op_type + ": only the packed 3-D query layout is described");
  const std::int64_t heads = ctx.node.attr_int("num_heads", 0);
  if (heads < 1) throw std::runtime_error(ctx.node.op_type + ": num_heads must be positive");
  const Shape& v = has_input(ctx, 2) ? input_shape(ctx, 2) : q;
  const Shape& k = has_input(ctx, 1) ? input_shape(ctx, 1) : q;
  const std::int64_t kv_heads = grouped ? ctx.node.attr_int("kv_num_heads", heads) : heads;
  const GiNaC::ex dv = simplify(v.back() / kv_heads);
  std::vector<OutputInfo> out{output(input(ctx, 0).dtype, {q[0], q[1], simplify(dv * heads)})};
  // Past key/value inputs: 6 and 7 of MultiHeadAttention, 3 and 4 of GroupQueryAttention.
  const std::size_t past = grouped ? 3 : 6;
  for (std::size_t o = 1; o < num_outputs(ctx); ++o) {
    if (has_input(ctx, past + o - 1)) {
      Shape present = input_shape(ctx, past + o - 1);
      if (present.size() == 4) present[2] = simplify(present[2] + k[1]);
      out.push_back(output(input(ctx, 0).dtype, present));
    } else {
      out.push_back(output(input(ctx, 0).dtype, {q[0], GiNaC::ex(static_cast<long>(kv_heads)), k[1], dv}));
    }
  }
  return out;
}

OpRule packed_attention_rule(bool grouped) {
  OpRule rule;
  rule.infer = [grouped](const OpContext& ctx) { return packed_attention_infer(ctx, grouped); };
  rule.iteration_space = [grouped](const OpContext& ctx) {
    if (auto s = packed_attention_space(ctx, grouped)) return *s;
    return opaque_iteration_space(ctx);  // a layout not described here (packed QKV, 4-D K/V)
  };
  return rule;
}

}  // namespace

void register_attention_ops(OpRegistry& registry) {
  registry.add("ai.symtensor", "FusedAttention", {attention_infer, attention_space});
  registry.add("com.microsoft", "MultiHeadAttention", packed_attention_rule(false));
  registry.add("com.microsoft", "GroupQueryAttention", packed_attention_rule(true));
}

}  // namespace symtensor::compiler
