#pragma once
// The knobs of every reference model family. A preset fills them with published sizes;
// command-line overrides change single fields; validate() rejects inconsistent sets.
#include <cstdint>
#include <string>
#include <vector>

namespace symtensor::models {

enum class Family { gpt, llama, bert, vit, resnet };

// none: weights are graph inputs with shapes only (listed in `symtensor.parameters`);
// random: deterministic random initializers, for numerical tests of small models.
enum class Weights { none, random };

// Rotary frequency scaling as HF's rope_scaling computes it into inv_freq: none, "linear"
// (inv_freq / factor), "llama3" (Llama 3.1: long wavelengths / factor, short ones kept,
// smooth in between; low/high_freq_factor and original_max_position_embeddings), or "yarn"
// (DeepSeek-V2/V3: interpolated below the beta_slow..beta_fast correction range, kept above,
// ramped in between; cos and sin scaled by the attention factor, transformers'
// _compute_yarn_parameters; gpt-oss leaves the correction range untruncated).
struct RopeScaling {
  std::string type;  // "" (none), "linear", "llama3", "yarn"
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  std::int64_t original_max_positions = 8192;
  double beta_fast = 32.0;      // yarn
  double beta_slow = 1.0;       // yarn
  double mscale = 0;            // yarn: 0 when absent
  double mscale_all_dim = 0;    // yarn: 0 when absent
  double attention_factor = 0;  // yarn: 0 when absent (derived from the mscales)
  bool truncate = true;         // yarn: the correction range rounded to whole dims (floor, ceil)
};

struct ModelConfig {
  std::string name;
  Family family = Family::gpt;
  std::int64_t layers = 0;
  std::int64_t hidden = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;        // < heads: grouped-query attention (llama family)
  std::int64_t intermediate = 0;    // MLP width (4*hidden for gpt/bert/vit)
  std::int64_t vocab = 0;
  std::int64_t seq = 0;             // maximum positions (learned tables, rotary range)
  std::int64_t type_vocab = 0;      // bert token types
  std::int64_t experts = 0;         // > 0: mixture of experts (llama family)
  std::int64_t top_k = 0;
  double capacity_factor = 1.0;     // expert capacity = ceil(factor * top_k * seq / experts) tokens
  bool qkv_bias = false;            // llama family: Qwen2 has biases on q/k/v
  // llama family, the fields of today's decoders (HF config.json names in brackets):
  std::string model_type;           // HF model_type written into the metadata ("" for the zoo's own)
  std::int64_t head_dim = 0;        // [head_dim] 0: hidden / heads; Qwen3 has heads * head_dim != hidden
  bool out_bias = false;            // [attention_bias] Llama's flag biases o_proj as well as q/k/v
  bool qk_norm = false;             // Qwen3: RMSNorm over head_dim on each head of q and k, before rotary
  bool tied_embeddings = false;     // [tie_word_embeddings] lm_head is embed_tokens transposed
  std::int64_t sliding_window = 0;  // [sliding_window] > 0: a query sees the last `window` keys
  bool norm_topk_prob = true;       // MoE: top-k weights renormalized (Mixtral, Qwen3-MoE); false: softmax over all
  RopeScaling rope_scaling;         // [rope_scaling]
  // Gemma 3 (model_type gemma3_text): GeGLU (tanh), (1 + weight) RMSNorms also after attention
  // and around the MLP, embedding x sqrt(hidden), tied head, q/k norms; local layers use the
  // sliding window and rope_local_theta, every `global_every`-th layer is global.
  std::int64_t global_every = 0;    // [sliding_window_pattern] 0: every layer alike
  double rope_local_theta = 10000.0;  // [rope_local_base_freq]
  double query_pre_attn_scalar = 0;   // [query_pre_attn_scalar] scores / sqrt(it); 0: head size
  // DeepSeek-V2/V3 (model_type deepseek_v2 / deepseek_v3): multi-head latent attention when
  // kv_lora_rank > 0. q = q_b_proj(RMSNorm(q_a_proj(x))) (q_proj(x) when q_lora_rank is 0) of
  // heads x (qk_nope_head_dim + qk_rope_head_dim); kv_a_proj_with_mqa(x) = [latent of
  // kv_lora_rank, one rope key of qk_rope_head_dim shared by all heads]; kv_b_proj(RMSNorm(latent))
  // = heads x (qk_nope_head_dim + v_head_dim); rotary on the rope parts only (de-interleaved
  // first); scores x qk_head_dim^-0.5, times yarn's mscale(factor, mscale_all_dim)^2.
  std::int64_t q_lora_rank = 0;       // [q_lora_rank] 0 (null): no query compression
  std::int64_t kv_lora_rank = 0;      // [kv_lora_rank]
  std::int64_t qk_nope_head_dim = 0;  // [qk_nope_head_dim]
  std::int64_t qk_rope_head_dim = 0;  // [qk_rope_head_dim]
  std::int64_t v_head_dim = 0;        // [v_head_dim]
  // DeepSeek's mixture of experts: the first `first_dense_layers` layers are dense SwiGLU MLPs
  // of dense_intermediate, the others `experts` routed experts of `intermediate` each plus
  // shared_experts always-on experts (one SwiGLU MLP of shared_experts x intermediate).
  std::int64_t first_dense_layers = 0;  // [first_k_dense_replace]
  std::int64_t dense_intermediate = 0;  // [intermediate_size] of those dense layers
  std::int64_t shared_experts = 0;      // [n_shared_experts]
  // The router: softmax over all experts (norm_topk_prob as above), or sigmoid scores with a
  // correction bias choosing the experts and the chosen scores renormalized (DeepSeek-V3's
  // noaux_tc); group-limited (expert_groups > 1): only the experts of the top_groups groups
  // ranked by the sum of their group_top best choice scores compete; weights x routed_scaling.
  bool sigmoid_router = false;          // [scoring_func] "sigmoid"
  std::int64_t expert_groups = 1;       // [n_group]
  std::int64_t top_groups = 1;          // [topk_group]
  std::int64_t group_top = 2;           // V3: a group's best 2 scores (noaux_tc), V2: its best 1 (max)
  double routed_scaling = 1.0;          // [routed_scaling_factor]
  // gpt-oss (model_type gpt_oss): every global_every-th layer full causal attention, the others
  // in the sliding window (layer_types); a learned logit per head (self_attn.sinks) joins each
  // softmax's denominator and is dropped after; q/k/v/o biased; the router biased, softmax over
  // its top-k logits; each expert one biased gate_up projection (gate and up interleaved) and a
  // biased down projection around the clamped SwiGLU (up + 1) * gate * sigmoid(alpha * gate),
  // gate <= limit, |up| <= limit.
  bool attention_sinks = false;
  bool expert_bias = false;             // router and experts biased
  double swiglu_limit = 0;              // [swiglu_limit] > 0: gpt-oss's clamped SwiGLU
  double swiglu_alpha = 1.702;
  // Nemotron (model_type nemotron, HF NemotronForCausalLM): LayerNorm1P norms (LayerNorm of
  // (1 + weight) with a bias), a non-gated squared-ReLU MLP up_proj -> relu(x)^2 -> down_proj
  // (biased under mlp_bias), rotary embeddings on the first partial_rotary of each head's dims.
  bool layer_norm_1p = false;       // with the squared-ReLU MLP: Nemotron's layer
  bool mlp_bias = false;            // [mlp_bias]
  double partial_rotary = 1.0;      // [partial_rotary_factor] the rotated share of a head
  // LLaVA-1.5 (HF LlavaForConditionalGeneration, llama family with vision.layers > 0): a CLIP
  // ViT reads each of `tiles` image tiles of image_size x image_size (LLaVA-NeXT's any-resolution
  // tiling when tiles > 1); the features after its first `layers` layers (hidden_states[-2] of a
  // tower one layer deeper: the last layer and the post-norm feed nothing and are not written),
  // class token dropped, pass the projector (Linear, GELU, Linear) and replace the first
  // tiles x (image_size / patch_size)^2 positions of the sequence, the image placeholders.
  struct VisionTower {
    std::int64_t layers = 0;
    std::int64_t hidden = 0;
    std::int64_t heads = 0;
    std::int64_t intermediate = 0;
    std::int64_t image_size = 0;
    std::int64_t patch_size = 0;
    std::int64_t tiles = 1;
    double norm_epsilon = 1e-5;
  } vision;
  std::int64_t image_size = 0;      // vit, resnet
  std::int64_t patch_size = 0;      // vit
  std::int64_t classes = 0;         // vit, resnet
  std::int64_t resnet_width = 64;   // channels of the stem; stages use 1x, 2x, 4x, 8x
  std::int64_t resnet_blocks[4] = {3, 4, 6, 3};
  double norm_epsilon = 1e-5;
  double rope_theta = 10000.0;
  // llama family: the decode step with its KV cache, as HF's modeling code runs it with a cache:
  // one new token (input_ids and position_ids [batch, 1]), per layer inputs past_key_<i> and
  // past_value_<i> [batch, kv_heads, past_seq, head_dim], the new key (after rotary) and value
  // concatenated after them (DynamicCache.update) and returned as present_key_<i> and
  // present_value_<i> after the logits; no mask (the one query sees every key).
  bool decode_step = false;
  // Multi-token prediction (DeepSeek-V3 section 2.2; Megatron-Core's --mtp-num-layers), llama
  // family: depth k = 1..mtp_layers takes the hidden state before the final norm h_{k-1}
  // (the decoder's for k = 1) and the embeddings of the tokens k ahead (input_ids rolled left
  // by k), h_k = eh_proj([enorm(embed); hnorm(h_{k-1})]) through one more decoder layer (MoE
  // like the last one), and its logits through final_layernorm and the shared output head
  // (output mtp_logits_<k>). HF's modeling code leaves the layers out (the checkpoints'
  // num_nextn_predict_layers), so it is written only when asked (`models --mtp N`).
  std::int64_t mtp_layers = 0;
  Weights weights = Weights::none;
  std::uint64_t seed = 1;
};

const char* family_name(Family family);
const char* weights_name(Weights weights);
Weights parse_weights(const std::string& text);  // "none" | "random"

// Throws std::runtime_error naming the model and the first inconsistent field.
void validate(const ModelConfig& config);

// The sequence positions the images take: tiles x (image_size / patch_size)^2 (0 without a vision tower).
std::int64_t image_tokens(const ModelConfig& config);

// Attention head size: head_dim, or hidden / heads when it is 0.
std::int64_t head_size(const ModelConfig& config);

// The rotated width of a head: qk_rope_head_dim under multi-head latent attention, else
// head_size x partial_rotary (truncated, as HF's rope init computes it).
std::int64_t rotary_dim(const ModelConfig& config);

// The rotary inv_freq table (rotary_dim / 2 values) with rope_scaling applied, as HF computes it.
std::vector<float> rotary_inv_freq(const ModelConfig& config);

// What HF multiplies cos and sin by: yarn's attention factor, 1 otherwise.
double rotary_attention_factor(const ModelConfig& config);

// yarn's get_mscale: 0.1 * mscale * ln(scale) + 1 (1 for scale <= 1).
double yarn_mscale(double scale, double mscale);

}  // namespace symtensor::models
