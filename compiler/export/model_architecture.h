#pragma once
// The architecture a training framework must be told to build the same model, read from the
// imported graph's structure (compiler/strategies/transformer_structure.h), iteration spaces
// and, for float constants the IR does not keep (an RMSNorm's epsilon, rotary frequencies),
// the ONNX file the graph came from. Never from node names. A fact the graph does not hold
// is left at 0 / unknown and named in `unknown`, for the emitters to write as a placeholder.
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ops/op_semantics.h"

namespace symtensor::compiler {

enum class NormKind { unknown, layer_norm, rms_norm };
enum class PositionKind { unknown, learned_absolute, rope, none };
std::string_view megatron_name(NormKind k);       // "LayerNorm", "RMSNorm", ""
std::string_view megatron_name(PositionKind k);   // "learned_absolute", "rope", "none", ""

struct ModelArchitecture {
  int layers = 0;
  long long hidden = 0;
  long long ffn_hidden = 0;      // dense MLP width; the experts' when every MLP is a MoE
  long long heads = 0;
  long long query_groups = 0;    // K/V heads; == heads without grouped-query attention
  long long head_dim = 0;        // kv channels
  bool gated_mlp = false;        // two column GEMMs multiplied (SwiGLU)
  bool silu = false;             // the gate's activation is x * sigmoid(x)
  NormKind norm = NormKind::unknown;
  double norm_epsilon = 0;       // 0: not in the graph
  PositionKind position = PositionKind::unknown;
  double rotary_base = 0;        // 0: not in the graph
  long long max_positions = 0;   // rows of a learned position table; 0 without one
  bool tied_embeddings = false;  // the LM head reads the token embedding table
  long long vocab = 0;
  bool linear_bias = false;      // biases on the output projection and the MLP
  bool qkv_bias = false;         // biases on the query/key/value projections
  bool dropout = false;          // the graph holds Dropout nodes
  bool qk_norm = false;          // per-head norms on the queries and keys (Qwen3, Gemma 3)
  long long experts = 0, top_k = 0, moe_ffn_hidden = 0;
  double capacity_factor = 0;    // tokens per expert over top_k * tokens / experts; 0: dropless or unknown
  std::vector<std::string> unknown;  // "rotary base: ..." one line per fact not found

  bool grouped_query() const { return query_groups > 0 && query_groups < heads; }
  bool moe() const { return experts > 0; }
};

// `spaces`: the graph's iteration spaces by node id.
ModelArchitecture read_model_architecture(const Graph& graph, const std::vector<IterationSpace>& spaces);

}  // namespace symtensor::compiler
