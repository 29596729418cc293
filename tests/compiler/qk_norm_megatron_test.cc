// Tensor parallelism for models with per-head q/k norms (Qwen3, Gemma 3): the q_norm/k_norm
// over head_dim are part of the attention block, not layer boundaries, so Megatron's layout
// cuts q_proj and k_proj column-parallel and the norms over the heads, and a Qwen3 layer's
// activations cross the tensor-parallel ranks exactly as a LLaMA layer of the same shape does
// (2 all-reduces of b·s·h forward and 2 backward). The norms' own weights (head_dim each) are
// replicated; their gradients are partial over the tensor-parallel ranks, each having seen
// its own heads, and are all-reduced there, as Megatron-Core does for q_layernorm/k_layernorm.
#include <fstream>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "onnx_models/hf_config.h"  // protobuf before GiNaC (CLN's Mutable macro)
#include "compiler/cost/plan_analysis.h"
#include "compiler/cost/step_estimate.h"
#include "compiler/strategies/megatron.h"
#include "compiler/analysis/transformer_structure.h"
#include "hardware/collectives.h"
#include "tests/compiler/strategies_test_util.h"
#include "tests/temp_path.h"

namespace symtensor::compiler {
namespace {

constexpr double kBatch = 4, kSeq = 8, kHidden = 64;

Graph hf_tiny(const std::string& name, const std::string& json) {
  const std::string path = symtensor::testing::temp_path(name + "_qk_norm_config.json");
  std::ofstream(path) << json;
  ImportOptions o;
  o.bindings = {{"batch", kBatch}, {"seq", kSeq}};
  o.warn_opaque = false;
  return import_onnx_model(models::build_model(models::load_hf_config(path)), name, o);
}

// The same shape: 2 layers, hidden 64, 4 query heads of 32 in 2 KV groups, SwiGLU 96.
Graph qwen3_tiny() {
  return hf_tiny("qwen3", R"({"model_type": "qwen3", "hidden_size": 64, "intermediate_size": 96,
      "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
      "vocab_size": 128, "tie_word_embeddings": false})");
}
Graph llama_tiny() {
  return hf_tiny("llama", R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 96,
      "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
      "vocab_size": 128, "tie_word_embeddings": false})");
}

// (collective, bytes) -> count over every operator's forward and backward collectives.
std::map<std::pair<hardware::Collective, double>, int> activation_collectives(const PlanAnalysis& a) {
  std::map<std::pair<hardware::Collective, double>, int> count;
  for (const OpWork& w : a.ops)
    for (const auto* comms : {&w.fwd_comm, &w.bwd_comm})
      for (const CommOp& c : *comms) ++count[{c.kind, c.bytes}];
  return count;
}

struct Priced {
  Plan plan;
  PlanAnalysis analysis;
};

Priced tp2(Graph& g, bool sp) {
  const hardware::Cluster cluster = testing::dgx(1, 2);
  MegatronKnobs k;
  k.tp = 2, k.sp = sp, k.mb = static_cast<int>(kBatch);  // one micro-batch of the whole batch
  StrategyOptions o;
  o.precision = hardware::Precision::fp16;
  Plan plan = make_megatron_plan(g, cluster, k, o);
  testing::expect_valid_plan(g, cluster, plan);
  PlanAnalysis a = analyze_plan(g, cluster, plan);
  return {std::move(plan), std::move(a)};
}

TEST(QkNormTensorParallel, Qwen3CutsQAndKProjectionsAndTheirNormsOverHeads) {
  Graph g = qwen3_tiny();
  const auto spaces = node_iteration_spaces(g);
  const TransformerStructure s = find_transformer_structure(g, spaces);
  ASSERT_EQ(s.layers(), 2);
  ASSERT_EQ(s.column.size(), 2u * 5);  // q, k, v, gate, up
  ASSERT_FALSE(s.head_norms.empty());
  const Priced p = tp2(g, false);
  MegatronKnobs k;
  k.tp = 2;
  const int tp_axis = megatron_mesh(testing::dgx(1, 2), k).tp_axis;
  // Every column GEMM (q_proj and k_proj included) is cut on its output width.
  for (NodeId n : s.column) {
    const int loop = gemm_output_loop(spaces[n], weight_operand(g, s, n));
    ASSERT_GE(loop, 0) << g.node(n).name;
    EXPECT_EQ(p.plan.node_cuts[n].loop_axes[loop], std::vector<int>{tp_axis}) << g.node(n).name;
  }
  int q_k_projections = 0;
  for (NodeId n : s.column) {
    const std::string& name = g.tensor(g.node(n).inputs.at(weight_operand(g, s, n))).name;  // its weight's
    q_k_projections += name.find("q_proj") != std::string::npos || name.find("k_proj") != std::string::npos;
  }
  EXPECT_EQ(q_k_projections, 2 * 2) << "q_proj and k_proj of each layer among the column GEMMs";
  // The q/k norms' nodes ([b, s, kv, (rep,) d] views) are cut over the KV heads (dim 2), never
  // over head_dim, which each norm reduces.
  int cut_norm_nodes = 0;
  for (NodeId n : s.head_norms) {
    const auto& out = spaces[n].output_dims.at(0);
    ASSERT_GE(out.size(), 4u) << g.node(n).name;
    const int heads = out[2], d = out.back();
    ASSERT_GE(heads, 0) << g.node(n).name;
    EXPECT_EQ(p.plan.node_cuts[n].loop_axes[heads], std::vector<int>{tp_axis}) << g.node(n).name;
    if (d >= 0) {
      EXPECT_TRUE(p.plan.node_cuts[n].loop_axes[d].empty()) << g.node(n).name;
    }
    ++cut_norm_nodes;
  }
  EXPECT_GT(cut_norm_nodes, 2 * 2 * 4);  // q and k norms of 2 layers, several nodes each
}

TEST(QkNormTensorParallel, Qwen3LayerCommunicatesAsALlamaLayerOfTheSameShape) {
  for (bool sp : {false, true}) {
    Graph qwen = qwen3_tiny(), llama = llama_tiny();
    const Priced q = tp2(qwen, sp), l = tp2(llama, sp);
    // Same collectives of the same sizes, operator by operator class: the q/k norms add none.
    EXPECT_EQ(activation_collectives(q.analysis), activation_collectives(l.analysis)) << "sp=" << sp;
    // The per-layer volume is Megatron's: 2 all-reduces (or reduce-scatter + all-gather
    // pairs) of b·s·h forward and 2 backward, per layer.
    const double bsh = 2.0 * kBatch * kSeq * kHidden;
    const auto collectives = activation_collectives(q.analysis);
    if (sp) {
      EXPECT_GE(collectives.count({hardware::Collective::reduce_scatter, bsh}), 1u);
    } else {
      const auto it = collectives.find({hardware::Collective::all_reduce, bsh});
      ASSERT_NE(it, collectives.end());
      EXPECT_GE(it->second, 2 * 4);  // 2 layers x 4, plus the embedding's and head's own
    }
    // Gradient syncs: LLaMA's, plus one tensor-parallel all-reduce of each q/k norm weight.
    std::map<std::string, int> qwen_syncs;
    double llama_bytes = 0, qwen_bytes = 0;
    for (const ParamWork& w : l.analysis.params)
      for (const CommOp& c : w.grad_sync) llama_bytes += c.bytes;
    for (const ParamWork& w : q.analysis.params) {
      const std::string& name = qwen.tensor(w.tensor).name;
      for (const CommOp& c : w.grad_sync) {
        qwen_bytes += c.bytes;
        if (name.find("q_norm") != std::string::npos || name.find("k_norm") != std::string::npos) {
          EXPECT_EQ(c.kind, hardware::Collective::all_reduce) << name;
          ++qwen_syncs[name];
        }
      }
    }
    EXPECT_EQ(qwen_syncs.size(), 2u * 2) << "sp=" << sp;
    const double norm_weight_bytes = 2 * 2 * 32 * 2.0;  // 2 layers x (q, k) x head_dim, fp16 gradients
    EXPECT_GE(qwen_bytes, llama_bytes + norm_weight_bytes) << "sp=" << sp;
    EXPECT_LE(qwen_bytes, llama_bytes + 2 * norm_weight_bytes) << "sp=" << sp;  // fp32 reduce dtype at most
  }
}

}  // namespace
}  // namespace symtensor::compiler
