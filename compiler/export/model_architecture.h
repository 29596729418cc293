#pragma once
// The architecture a training framework must be told to build the same model, read from the
// imported graph's structure (compiler/analysis/transformer_structure.h), iteration spaces
// and, for float constants the IR does not keep (an RMSNorm's epsilon, rotary frequencies),
// the ONNX file the graph came from. Never from node names. A fact the graph does not hold
// is left at 0 / unknown and named in `unknown`, for the emitters to write as a placeholder.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ops/op_semantics.h"

namespace symtensor::compiler {

enum class NormKind { unknown, layer_norm, rms_norm };
enum class PositionKind { unknown, learned_absolute, rope, none };
// How a MoE router scores the experts: softmax of the top-k logits (Mixtral), softmax over all
// experts then the top-k (pre-softmax), or sigmoid scores.
enum class RouterScore { unknown, topk_softmax, pre_softmax, sigmoid };
std::string_view megatron_name(NormKind k);       // "LayerNorm", "RMSNorm", ""
std::string_view megatron_name(PositionKind k);   // "learned_absolute", "rope", "none", ""

struct ModelArchitecture {
  int layers = 0;                // decoder layers
  int mtp_layers = 0;            // multi-token prediction layers after them (TransformerStructure::prediction_anchors)
  long long hidden = 0;
  long long ffn_hidden = 0;      // dense MLP width; the experts' when every MLP is a MoE
  long long heads = 0;
  long long query_groups = 0;    // K/V heads; == heads without grouped-query attention
  long long head_dim = 0;        // kv channels
  bool gated_mlp = false;        // two column GEMMs multiplied (SwiGLU)
  bool silu = false;             // the gate's activation is x * sigmoid(x)
  bool squared_relu = false;     // an MLP of one column GEMM and relu(x)^2 (Nemotron)
  NormKind norm = NormKind::unknown;
  bool norm_1p = false;          // the norms scale by 1 + weight (zero-centered gamma: Nemotron's LayerNorm1P)
  double norm_epsilon = 0;       // 0: not in the graph
  PositionKind position = PositionKind::unknown;
  double rotary_base = 0;        // 0: not in the graph
  double rotary_percent = 0;     // the rotated share of a head when not all of it (Nemotron 0.5); 0: all or unknown
  long long max_positions = 0;   // rows of a learned position table; 0 without one
  bool tied_embeddings = false;  // the LM head reads the token embedding table
  long long vocab = 0;
  bool linear_bias = false;      // biases on the output projection and the MLP
  bool qkv_bias = false;         // biases on the query/key/value projections
  bool dropout = false;          // the graph holds Dropout nodes
  // Each norm after its residual add (BERT, nn.TransformerEncoderLayer with norm_first=False):
  // the residual adds of most layers read a norm of another residual add's sum. Megatron-LM's
  // and torchtitan's layers normalize before.
  bool post_norm = false;
  bool qk_norm = false;          // per-head norms on the queries and keys (Qwen3, Gemma 3)
  long long experts = 0, top_k = 0, moe_ffn_hidden = 0;
  double capacity_factor = 0;    // tokens per expert over top_k * tokens / experts; 0: dropless (buffers of the even share) or unknown
  // Fine-grained MoE (DeepSeek): per layer 1 when its MLP is a mixture of experts, 0 when
  // dense (empty without experts); the always-on shared experts' total width beside the routed.
  std::vector<int> moe_layers;
  long long shared_expert_ffn = 0;
  // The router, read from the ops between the router GEMM and the expert choice.
  RouterScore router_score = RouterScore::unknown;
  bool router_renormalized = false;  // the chosen weights divided by their sum
  bool expert_bias = false;          // a learned per-expert bias added to the scores that choose
  long long router_groups = 0;       // group-limited routing: experts in this many groups ...
  long long router_group_topk = 0;   // ... of which this many, ranked by ...
  long long router_group_top = 0;    // ... the sum of their best this many scores, compete
  double router_scaling = 0;         // the routing weights times this; 0: not scaled
  // Multi-head latent attention (DeepSeek-V2/V3): queries through a q_lora_rank latent (0: no
  // compression), keys and values through a kv_lora_rank latent, heads of qk_head_dim plus a
  // qk_pos_head_dim rotary part shared by the key, values of v_head_dim.
  bool mla = false;
  long long q_lora_rank = 0, kv_lora_rank = 0, qk_head_dim = 0, qk_pos_head_dim = 0, v_head_dim = 0;
  double attention_scale = 0;    // the scores' multiplier; 0: not found
  double rotary_factor = 0;      // cos and sin times this (yarn's attention factor); 0: not found
  // YaRN-scaled rotary frequencies (the table is not theta^(-2i/d)): the scaling factor and
  // the mscales Megatron-LM reproduces the softmax scale and rotary factor from.
  bool yarn = false;
  double yarn_factor = 0, yarn_mscale = 0, yarn_mscale_all_dim = 0;
  std::vector<double> inv_freq;  // the rotary inverse frequencies the graph holds
  // gpt-oss: layers whose softmax has a learned per-head sink logit; layers attending in a
  // sliding window (window -> layers); a bias on the router's logits; the experts' gate and up
  // interleaved in one projection, the SwiGLU clamped (a Min or Clip between the projections).
  int sink_layers = 0;
  std::map<long long, int> window_layers;
  bool router_bias = false;
  bool interleaved_glu = false, clamped_glu = false;
  double yarn_rotary_factor = 0;  // outside MLA: cos and sin x this on a non-geometric (YaRN) table; 0: none
  // Llama 3.1's rope scaling: the low frequencies of a theta^(-2i/d) table divided by this, the
  // high ones kept, cos and sin unscaled (Megatron's --use-rope-scaling); 0: none.
  double llama3_rope_factor = 0;
  // What Megatron-LM / NeMo cannot be told of this architecture, one line each: the export
  // says so (not exact) instead of launching a different model.
  std::vector<std::string> megatron_gaps;
  std::vector<std::string> unknown;  // "rotary base: ..." one line per fact not found

  bool grouped_query() const { return query_groups > 0 && query_groups < heads; }
  bool moe() const { return experts > 0; }
  bool dense_first_layers() const;   // some layers' MLPs are dense, the others MoE
  // DeepSeek's features (latent attention, shared experts, dense layers among MoE ones, a
  // router other than softmax over the top-k logits), one line each: what a llama-style
  // model definition does not build.
  std::vector<std::string> deepseek_features() const;
  // gpt-oss's features (attention sinks, sliding windows, the clamped interleaved SwiGLU, the
  // router's bias), one line each.
  std::vector<std::string> gpt_oss_features() const;
  // Nemotron's features (the squared-ReLU MLP, (1 + weight) norms, partial rotary), one line each.
  std::vector<std::string> nemotron_features() const;
};

// Megatron-LM's --moe-layer-freq pattern: "([0]*3+[1]*58)".
std::string moe_layer_pattern(const std::vector<int>& layers, std::string_view open = "(", std::string_view close = ")");
// Megatron-Core's YaRN inverse frequencies (rotary dims `dim`, the original context and
// correction betas), as its YarnRotaryEmbedding computes them.
std::vector<double> megatron_yarn_inv_freq(int dim, double base, double factor, double original_positions, double beta_fast,
                                           double beta_slow);
// Megatron-Core's yarn mscale: 0.1 * mscale * ln(factor) + 1 (1 when factor <= 1).
double megatron_yarn_mscale(double factor, double mscale);

// `spaces`: the graph's iteration spaces by node id.
ModelArchitecture read_model_architecture(const Graph& graph, const std::vector<IterationSpace>& spaces);

}  // namespace symtensor::compiler
