#pragma once
// The Megatron-relevant structure of a transformer, found from the graph's data flow and
// iteration spaces only (never from node names):
// - weight GEMMs: gemm operators with exactly one operand derived from parameters alone
//   (a parameter, or a data-movement op such as Transpose of one);
// - normalization regions: a normalization operator (LayerNormalization ...) or a
//   decomposed RMSNorm (x -> Pow/Mul -> ReduceMean over the last dim -> ... -> x * that),
//   each extended by the element-wise ops that apply parameters (scale, bias); a norm whose
//   input comes from a weight GEMM (through data movement and bias adds) and is narrower than
//   that GEMM's output — a per-head norm such as Qwen3's and Gemma 3's q_norm/k_norm over
//   head_dim — is no region but part of the attention block (head_norms), cut over the heads;
//   a norm of a weight GEMM's output (or a slice of it: one vector a token, not per head)
//   read by nothing else (not a residual stream, as behind an MTP layer's eh_proj)
//   that feeds a weight GEMM — the latent norms of multi-head latent attention, DeepSeek's
//   q_a_layernorm and kv_a_layernorm — is no region either (latent_norms), and the GEMMs it
//   normalizes the output of are down projections (q_a_proj, kv_a_proj_with_mqa), which the
//   search for column-parallel GEMMs passes through: Megatron-Core keeps them whole on every
//   tensor-parallel rank, with their norms, and cuts the up projections behind them;
// - column-parallel GEMMs: the first weight GEMMs reached from a normalization region's
//   output whose output in turn reaches a weight GEMM before any normalization region;
//   those GEMMs are row-parallel, and the nodes in between form the tensor-parallel region
//   (attention GEMMs are the gemm operators there without weights, and fused attention);
//   a routing operator's routing operand (operand 0) is not followed, so a MoE router is
//   not column-parallel while the expert GEMMs it routes to are;
// - vocabulary head: a weight GEMM that is neither and from which no weight GEMM is reachable;
// - embeddings: Gathers from a parameter;
// - layers: each normalization region whose tensor-parallel region holds a softmax starts
//   one (attention), in topological order; residual adds produce a region's input. A
//   post-norm model's first layer (BERT without its embedding norm, PyTorch's
//   nn.TransformerEncoderLayer with norm_first=False) reads the embedding, not a norm: weight
//   GEMMs that no region reaches and whose output reaches weight GEMMs through a softmax are
//   column-parallel as well, and the tensor they read (through data movement) starts a layer,
//   at its earliest reader.
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ops/op_semantics.h"

namespace symtensor::compiler {

struct TransformerStructure {
  std::vector<bool> weight_derived;  // per tensor: weight_derived_tensors
  std::vector<bool> weight_gemm;     // per node
  std::vector<int> norm_region;      // per node: region index, or -1
  std::vector<NodeId> norm_anchors;  // per region: its first node in topological order
  std::vector<TensorId> norm_inputs; // per region: the residual stream tensor it normalizes
  std::vector<NodeId> head_norms;    // nodes of per-head norms inside attention (q_norm, k_norm)
  std::vector<NodeId> latent_norms;  // nodes of the norms between down and up projections (MLA)
  std::vector<NodeId> down_projections;  // weight GEMMs whose output a latent norm normalizes
  std::vector<NodeId> column, row, attention, vocab_heads, embeddings, residual_adds;
  std::vector<bool> in_tp_region;    // per node: between a column and its row GEMMs
  std::vector<NodeId> layer_anchors; // one per layer, topological order
  std::vector<TensorId> layer_inputs; // per layer: the residual stream it reads (its norm's input)
  // The anchors of multi-token prediction layers (DeepSeek-V3's MTP, Megatron's
  // --mtp-num-layers): a layer after another whose residual stream starts at a weight GEMM
  // of concatenated inputs (eh_proj over the normed embeddings and hidden state), not at an
  // Add or the embedding.
  std::vector<NodeId> prediction_anchors;

  int layers() const { return static_cast<int>(layer_anchors.size()); }
  int prediction_layers() const { return static_cast<int>(prediction_anchors.size()); }
  int decoder_layers() const { return layers() - prediction_layers(); }
  // A norm region of the layers, for the model's norm kind: the first layer's, or (a post-norm
  // model's first layer has none) the first region; -1 when there is none.
  int layer_norm_region() const {
    for (NodeId a : layer_anchors)
      if (norm_region.at(a) >= 0) return norm_region[a];
    return norm_anchors.empty() ? -1 : 0;
  }
};

TransformerStructure find_transformer_structure(const Graph& graph, const std::vector<IterationSpace>& spaces);

// Each node's pipeline stage when stage st runs layers_per_stage[st] of the decoder layers, in
// order, and the multi-token prediction layers run on the last stage (as Megatron-Core places
// them): the latest stage among its producers, raised to its layer's stage at the layer's
// anchor; a node fed only by graph inputs and constants takes its earliest consumer's stage.
// `order`: the graph's topological order.
std::vector<int> node_stages(const Graph& graph, const std::vector<NodeId>& order, const TransformerStructure& s,
                             const std::vector<int>& layers_per_stage);

// Loop roles in a GEMM's iteration space (-1 when absent).
// The output's last dim, mapped by the weight operand: Megatron's column cut.
int gemm_output_loop(const IterationSpace& space, int weight_input);
// The reduction loop mapped by both operands: Megatron's row cut.
int gemm_contraction_loop(const IterationSpace& space);
// Attention GEMM: the first parallel loop mapped by every input and the output, other than
// `batch_loop` and the loops of the output's last two dims (the heads, or KV groups).
int attention_heads_loop(const IterationSpace& space, int batch_loop);
// A weight GEMM's expert loop: a parallel loop that every operand and the output map, the
// weight included (experts stacked in the weight, as [E, h, I]); -1 when none.
int gemm_expert_loop(const IterationSpace& space, int weight_input);
// Index of the operand of a weight GEMM that is derived from parameters, or -1.
int weight_operand(const Graph& graph, const TransformerStructure& s, NodeId node);

}  // namespace symtensor::compiler
