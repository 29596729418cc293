#pragma once
// Transformer building blocks written as PyTorch's exporter writes them (opset 17).
// Activations are [batch, seq, hidden]; linear weights are stored [in, out].
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "onnx_models/graph_builder.h"

namespace symtensor::models {

// MatMul(x, W[in,out]) (+ Add(bias)); parameters "<module>.weight", "<module>.bias".
std::string linear(GraphBuilder& g, const std::string& x, const std::string& module, std::int64_t in,
                   std::int64_t out, bool bias);
// 2-D Linear as exported: Gemm(x, W[out,in], b, transB=1).
std::string gemm_linear(GraphBuilder& g, const std::string& x, const std::string& module, std::int64_t in,
                        std::int64_t out);

// LayerNormalization(x, weight, bias); unit_offset (Nemotron's LayerNorm1P): the weight is
// stored as an offset from 1, LayerNormalization(x, Add(weight, 1), bias).
std::string layer_norm(GraphBuilder& g, const std::string& x, const std::string& module, std::int64_t hidden,
                       double epsilon, bool unit_offset = false);
// x * weight / sqrt(mean(x^2) + eps): Pow, ReduceMean, Add, Sqrt, Div, Mul, Mul.
// unit_offset (Gemma): the weight is stored as an offset from 1, x * (1 + weight) / ...
std::string rms_norm(GraphBuilder& g, const std::string& x, const std::string& module, std::int64_t hidden,
                     double epsilon, bool unit_offset = false);
// Exact GELU as x * 0.5 * (1 + erf(x / sqrt(2))): Div, Erf, Add, Mul, Mul.
std::string gelu(GraphBuilder& g, const std::string& x);
std::string silu(GraphBuilder& g, const std::string& x);  // x * Sigmoid(x)
// gelu_pytorch_tanh: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
std::string gelu_tanh(GraphBuilder& g, const std::string& x);

// cos/sin of rotary embeddings for position_ids [batch, seq]: [batch, seq, head_dim].
struct Rotary {
  std::string cos, sin;
};
Rotary rotary_tables(GraphBuilder& g, const std::string& position_ids, std::int64_t head_dim, double theta);
// The same from a given inv_freq table (head_dim / 2 values, e.g. with rope_scaling applied);
// cos and sin times attention_factor when it is not 1 (yarn).
Rotary rotary_tables(GraphBuilder& g, const std::string& position_ids, const std::vector<float>& inv_freq,
                     double attention_factor = 1.0);

// Additive causal mask [batch, seq, seq]: 0 where key position <= query position, -1e9 elsewhere.
std::string causal_mask(GraphBuilder& g, const std::string& position_ids);
// Causal and windowed (Mistral's sliding window, as HF's sliding_window_causal mask): a query
// at position q sees keys k with q - window < k <= q; -1e9 elsewhere. [batch, seq, seq].
std::string sliding_window_mask(GraphBuilder& g, const std::string& position_ids, std::int64_t window);

struct AttentionSpec {
  std::int64_t hidden = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;         // == heads: multi-head; fewer: grouped-query (5-D scores)
  std::int64_t head_dim = 0;         // 0: hidden / heads; else q is [h, heads*head_dim], o [heads*head_dim, h]
  bool qk_norm = false;              // Qwen3: RMSNorm "q_norm"/"k_norm" over head_dim on each head, before rotary
  double qk_norm_epsilon = 1e-6;
  bool qk_norm_unit_offset = false;  // Gemma's (1 + weight) norms
  double score_divisor = 0;          // scores / score_divisor; 0: sqrt(head_dim)
  bool fused_qkv = false;            // one [h, 3h] projection split in three (GPT's c_attn)
  bool qkv_bias = false;
  bool out_bias = false;
  const char* q_name = "q_proj";     // module names of the projections
  const char* k_name = "k_proj";
  const char* v_name = "v_proj";
  const char* qkv_name = "c_attn";
  const char* out_name = "o_proj";  // names may hold dots: "output.dense"
  const Rotary* rotary = nullptr;
  // Rotated dims of a head (Nemotron's partial rotary: the first rotary_dim, the rest passed
  // through: Slice, rotate, Concat); 0: all of head_dim.
  std::int64_t rotary_dim = 0;
  // Additive mask broadcastable to the scores: [b, heads, s, s], or [b, kv, rep, s, s] for GQA.
  std::string mask;
  // gpt-oss's attention sinks (GptOss eager_attention_forward): a learned logit per head,
  // "sinks" [heads], reshaped to the heads of the scores, expanded to [..., s, 1] from q's shape
  // and concatenated after the keys; the row max subtracted, the softmax taken, the sink column
  // dropped (Slice) before the product with V.
  bool sinks = false;
  // A decode step's cache (ModelConfig::decode_step): graph inputs [b, kv, past, d]; the new key
  // (after rotary) and value are concatenated after them along the sequence, and the results,
  // which attention then reads, are left in *present_key / *present_value.
  std::string past_key, past_value;
  std::string* present_key = nullptr;
  std::string* present_value = nullptr;
};
// Self-attention of x [b, s, h]; the module scope is the caller's.
std::string self_attention(GraphBuilder& g, const std::string& x, const AttentionSpec& spec);

// Multi-head latent attention (DeepSeek-V2/V3, HF DeepseekV3Attention, the non-absorbed form):
// q = q_b_proj(q_a_layernorm(q_a_proj(x))) (q_proj(x) without q_lora_rank) as [b, heads, s,
// nope + rope]; kv_a_proj_with_mqa(x) split into the latent (kv_lora_rank) and one rope key
// [b, 1, s, rope]; kv_b_proj(kv_a_layernorm(latent)) as [b, heads, s, nope + v] split into the
// keys' nope part and the values; the rope parts de-interleaved (rope_interleave) and rotated,
// the rope key expanded to every head; softmax(q·kᵀ · scale + mask)·v; o_proj from heads x v.
struct LatentAttentionSpec {
  std::int64_t hidden = 0, heads = 0;
  std::int64_t q_lora_rank = 0;  // 0: q_proj
  std::int64_t kv_lora_rank = 0, nope = 0, rope = 0, v = 0;
  double norm_epsilon = 1e-6;
  double scale = 0;  // 0: (nope + rope)^-0.5
  const Rotary* rotary = nullptr;  // tables of `rope` dims
  std::string mask;  // broadcastable to [b, heads, s, s]
};
std::string latent_attention(GraphBuilder& g, const std::string& x, const LatentAttentionSpec& spec);

// The pre-LayerNorm encoder layer of GPT-2, ViT and CLIP: x + attention(LN1(x)), then
// y + mlp(LN2(y)); each residual Add sits in its part's module ("" for none), as exporters
// name them.
struct PreNormLayer {
  std::string norm1, attention, norm2, mlp;  // module names
  std::int64_t hidden = 0;
  double epsilon = 1e-5;
  AttentionSpec attention_spec;
};
std::string pre_norm_layer(GraphBuilder& g, const std::string& x, const PreNormLayer& layer,
                           const std::function<std::string(const std::string&)>& mlp);

// Rank the mask to the scores of self_attention: [b, s, s] -> [b, 1, s, s] or [b, 1, 1, s, s].
std::string mask_for_scores(GraphBuilder& g, const std::string& mask3, bool grouped);

// fc_in -> GELU -> fc_out with biases.
std::string gelu_mlp(GraphBuilder& g, const std::string& x, std::int64_t hidden, std::int64_t intermediate,
                     const char* in_name, const char* out_name);
// down(silu(gate(x)) * up(x)), no biases; gelu_tanh_gate: GeGLU (Gemma) instead.
std::string swiglu_mlp(GraphBuilder& g, const std::string& x, std::int64_t hidden, std::int64_t intermediate,
                       bool gelu_tanh_gate = false);
// Nemotron's MLP (HF NemotronMLP, hidden_act relu2): down(relu(up(x))^2), no gate; the square
// is Mul(r, r) as torch.square exports.
std::string squared_relu_mlp(GraphBuilder& g, const std::string& x, std::int64_t hidden, std::int64_t intermediate,
                             bool bias);
// Top-k routed mixture of SwiGLU experts with GShard-style capacity routing (static shapes):
// router -> TopK -> softmax weights; each sequence is one group, each expert takes at most
// C = ceil(capacity_factor * top_k * seq / experts) of its tokens (first come, first served;
// the rest are dropped); dispatch mask and combine weights [b, s, E, C]; then
// Einsum("bsec,bsh->bech"), the experts' SwiGLU as Einsums over [b, E, C, h] with stacked
// weights experts.w1/w3 [E, h, I] and experts.w2 [E, I, h], Einsum("bsec,bech->bsh").
struct MoeSpec {
  std::int64_t hidden = 0, intermediate = 0, experts = 0, top_k = 0;
  double capacity_factor = 1.0;
  // true: softmax over the k top logits (= softmax over all, then renormalized: Mixtral,
  // Qwen3-MoE norm_topk_prob); false: Softmax over all experts, then TopK of the probabilities.
  bool norm_topk_prob = true;
  // DeepSeek's routers (HF DeepseekV3TopkRouter, DeepseekV2Moe): sigmoid scores, experts
  // chosen by scores + gate.e_score_correction_bias [E], weights the chosen scores
  // (renormalized when norm_topk_prob); group-limited when groups > 1: the scores are viewed
  // as [groups, E / groups], each group ranked by the sum of its group_top best, and the
  // experts outside the top_groups best groups set to 0 before the top-k; the weights times
  // routed_scaling.
  bool sigmoid = false;
  std::int64_t groups = 1, top_groups = 1, group_top = 2;
  double routed_scaling = 1.0;
  // gpt-oss (HF GptOssTopKRouter, GptOssExperts): the router "router" with a bias; each expert
  // one projection experts.gate_up_proj [E, h, 2I] + experts.gate_up_proj_bias [E, 2I] whose
  // columns interleave gate (even) and up (odd), read as [.., I, 2] and gathered; gate clamped
  // to <= limit, up to [-limit, limit]; (up + 1) * gate * sigmoid(alpha * gate); then
  // experts.down_proj [E, I, h] + experts.down_proj_bias [E, h]. limit 0: no clamp.
  bool gpt_oss = false;
  double limit = 0, alpha = 1.702;
};
std::string moe_mlp(GraphBuilder& g, const std::string& x, const MoeSpec& spec);

}  // namespace symtensor::models
