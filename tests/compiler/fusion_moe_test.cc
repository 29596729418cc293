// The MoE fusion pattern on the zoo's tiny Mixtral (capacity routing, onnx_models/layers.cc):
// the dispatch and combine einsums become MoeDispatch / MoeCombine with the einsum's loops
// and the costs of a token dispatcher, the expert GEMMs stay einsums over [b, E, C, h], and
// the Megatron structure keeps the router out of the column-parallel GEMMs.
#include <algorithm>
#include <string>

#include <gtest/gtest.h>

#include "onnx_models/model_zoo.h"  // protobuf before GiNaC (CLN's Mutable macro)
#include "compiler/analysis/model_stats.h"
#include "compiler/onnx_import/import.h"
#include "compiler/strategies/propagation.h"
#include "compiler/analysis/transformer_structure.h"

namespace symtensor::compiler {
namespace {

// Mixtral tiny: 2 layers, h 64, 4 experts, top-2; batch 2, seq 8: capacity C = 2*seq/4 = 4.
constexpr double kBatch = 2, kSeq = 8, kHidden = 64, kExperts = 4, kTopK = 2, kCapacity = 4;

Graph tiny_mixtral(bool fuse_moe) {
  ImportOptions o;
  o.bindings = {{"batch", kBatch}, {"seq", kSeq}};
  o.warn_opaque = false;
  o.fusion.moe = fuse_moe;
  return import_onnx_model(models::build_model(models::preset_config("mixtral-8x7b-tiny")), "mixtral-tiny", o);
}

std::vector<NodeId> nodes_of(const Graph& g, const std::string& op) {
  std::vector<NodeId> ids;
  for (NodeId id = 0; id < static_cast<NodeId>(g.nodes().size()); ++id)
    if (g.node(id).op_type == op) ids.push_back(id);
  return ids;
}

double value(const Graph& g, const GiNaC::ex& e) { return g.symbols.evaluate(e).value_or(-1); }

std::string loop_names(const IterationSpace& s) {
  std::string names;
  for (const auto& l : s.loops) names += l.name + (l.reduction ? "*" : "") + " ";
  return names;
}

TEST(MoeFusion, DispatchAndCombineBecomeRoutingOperators) {
  Graph g = tiny_mixtral(true);
  const auto dispatch = nodes_of(g, "MoeDispatch"), combine = nodes_of(g, "MoeCombine");
  ASSERT_EQ(dispatch.size(), 2u);
  ASSERT_EQ(combine.size(), 2u);
  EXPECT_EQ(nodes_of(g, "Einsum").size(), 6u);  // w1, w3, w2 per layer
  // ceil(seq / 2) slots: the graph computes the capacity in integers.
  EXPECT_EQ(g.metadata.at("symtensor.fused.moe").rfind("2 layers; top-2 of 4 experts, capacity floor_div(1+seq,2)", 0), 0u)
      << g.metadata.at("symtensor.fused.moe");
  EXPECT_EQ(g.node(combine[0]).attr_int("top_k", 0), 2);

  // Dispatch: the einsum bsec,bsh->bech's loops (s summed), 0 FLOPs, the routed token
  // rows read and written (f32): 2 * b*E*C*h * 4 bytes.
  const IterationSpace d = iteration_space_of(g, dispatch[0]);
  EXPECT_EQ(d.kind, OpKind::routing);
  EXPECT_EQ(loop_names(d), "b s* e c h ");
  EXPECT_EQ(d.input_dims, (std::vector<std::vector<int>>{{0, 1, 2, 3}, {0, 1, 4}}));
  EXPECT_EQ(d.output_dims, (std::vector<std::vector<int>>{{0, 2, 3, 4}}));
  EXPECT_EQ(value(g, d.flops), 0);
  EXPECT_EQ(value(g, d.bytes), 2 * kBatch * kExperts * kCapacity * kHidden * 4);
  // Combine bsec,bech->bsh: 2*k*h FLOPs per token; expert outputs read, tokens written.
  const IterationSpace c = iteration_space_of(g, combine[0]);
  EXPECT_EQ(c.kind, OpKind::routing);
  EXPECT_EQ(loop_names(c), "b s e* c* h ");
  EXPECT_EQ(value(g, c.flops), 2 * kTopK * kHidden * kBatch * kSeq);
  EXPECT_EQ(value(g, c.bytes), (kBatch * kExperts * kCapacity * kHidden + kBatch * kSeq * kHidden) * 4);
}

TEST(MoeFusion, OffKeepsTheDenseEinsums) {
  Graph fused = tiny_mixtral(true), plain = tiny_mixtral(false);
  EXPECT_TRUE(nodes_of(plain, "MoeDispatch").empty());
  EXPECT_EQ(nodes_of(plain, "Einsum").size(), 10u);
  EXPECT_EQ(plain.metadata.count("symtensor.fused.moe"), 0u);
  // Unfused, the one-hot contractions count 2*b*s*E*C*h each as GEMM FLOPs; fused, the
  // dispatch counts none and the combine 2*k*h per token, not as GEMMs.
  const double one_hot = 2 * kBatch * kSeq * kExperts * kCapacity * kHidden;
  const double plain_gemm = value(plain, compute_model_stats(plain).gemm_flops);
  const double fused_gemm = value(fused, compute_model_stats(fused).gemm_flops);
  EXPECT_DOUBLE_EQ(plain_gemm - fused_gemm, 2 * 2 * one_hot);
  const double plain_all = value(plain, compute_model_stats(plain).forward_flops);
  const double fused_all = value(fused, compute_model_stats(fused).forward_flops);
  EXPECT_DOUBLE_EQ(plain_all - fused_all, 2 * (2 * one_hot - 2 * kTopK * kHidden * kBatch * kSeq));
}

TEST(MoeFusion, RouterIsNotColumnParallelAndExpertsHaveAnExpertLoop) {
  Graph g = tiny_mixtral(true);
  const auto spaces = node_iteration_spaces(g);
  const TransformerStructure s = find_transformer_structure(g, spaces);
  int experts = 0;
  for (NodeId n : s.column) {
    const auto& inputs = g.node(n).inputs;
    for (TensorId t : inputs)
      EXPECT_EQ(g.tensor(t).name.find("block_sparse_moe.gate.weight"), std::string::npos) << g.node(n).name;
    const int loop = gemm_expert_loop(spaces[n], weight_operand(g, s, n));
    if (loop < 0) continue;
    ++experts;
    EXPECT_EQ(spaces[n].loops[loop].name, "e");
  }
  EXPECT_EQ(experts, 4);  // w1, w3 of both layers
  int expert_rows = 0;
  for (NodeId n : s.row) expert_rows += gemm_expert_loop(spaces[n], weight_operand(g, s, n)) >= 0;
  EXPECT_EQ(expert_rows, 2);  // w2
}

}  // namespace
}  // namespace symtensor::compiler
