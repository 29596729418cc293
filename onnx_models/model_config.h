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
// (inv_freq / factor), or "llama3" (Llama 3.1: long wavelengths / factor, short ones kept,
// smooth in between; low/high_freq_factor and original_max_position_embeddings).
struct RopeScaling {
  std::string type;  // "" (none), "linear", "llama3"
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  std::int64_t original_max_positions = 8192;
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
  std::int64_t image_size = 0;      // vit, resnet
  std::int64_t patch_size = 0;      // vit
  std::int64_t classes = 0;         // vit, resnet
  std::int64_t resnet_width = 64;   // channels of the stem; stages use 1x, 2x, 4x, 8x
  std::int64_t resnet_blocks[4] = {3, 4, 6, 3};
  double norm_epsilon = 1e-5;
  double rope_theta = 10000.0;
  Weights weights = Weights::none;
  std::uint64_t seed = 1;
};

const char* family_name(Family family);
const char* weights_name(Weights weights);
Weights parse_weights(const std::string& text);  // "none" | "random"

// Throws std::runtime_error naming the model and the first inconsistent field.
void validate(const ModelConfig& config);

// Attention head size: head_dim, or hidden / heads when it is 0.
std::int64_t head_size(const ModelConfig& config);

// The rotary inv_freq table (head_size / 2 values) with rope_scaling applied, as HF computes it.
std::vector<float> rotary_inv_freq(const ModelConfig& config);

}  // namespace symtensor::models
