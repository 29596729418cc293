// A Qwen3-MoE read from a Hugging Face config.json (#31) through the importer and the
// Megatron-LM generator with expert parallelism: the experts are cut over the ep ranks, the
// tokens cross by all-to-all, and the plan prices (step time, memory) like the zoo's Mixtral.
#include <cmath>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "onnx_models/hf_config.h"  // protobuf before GiNaC (CLN's Mutable macro)
#include "compiler/cost/plan_analysis.h"
#include "compiler/cost/step_estimate.h"
#include "compiler/strategies/megatron.h"
#include "hardware/collectives.h"
#include "tests/compiler/strategies_test_util.h"

namespace symtensor::compiler {
namespace {

Graph qwen3_moe_tiny_graph() {
  const std::string path = ::testing::TempDir() + "/qwen3_moe_tiny_config.json";
  std::ofstream(path) << R"({"model_type": "qwen3_moe", "hidden_size": 64, "intermediate_size": 192,
      "moe_intermediate_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
      "head_dim": 32, "vocab_size": 128, "num_experts": 8, "num_experts_per_tok": 2, "norm_topk_prob": true,
      "decoder_sparse_step": 1, "mlp_only_layers": [], "rms_norm_eps": 1e-06, "rope_theta": 1000000.0})";
  ImportOptions o;
  o.bindings = {{"batch", 8.0}, {"seq", 8.0}};
  o.warn_opaque = false;
  return import_onnx_model(models::build_model(models::load_hf_config(path)), "qwen3-moe-tiny", o);
}

TEST(HfConfigMegatron, Qwen3MoeTinyPricesWithExpertParallelism) {
  Graph g = qwen3_moe_tiny_graph();
  const hardware::Cluster cluster = testing::dgx(1, 4);
  const Plan plan = make_megatron_plan(g, cluster, parse_megatron_knobs("ep=4"), StrategyOptions{});
  testing::expect_valid_plan(g, cluster, plan);
  // The experts' einsums are cut on their expert loop only (8 experts over 4 ranks).
  const auto spaces = node_iteration_spaces(g);
  int expert_cuts = 0;
  for (NodeId n = 0; n < static_cast<NodeId>(g.nodes().size()); ++n) {
    if (g.node(n).op_type != "Einsum") continue;
    for (std::size_t l = 0; l < plan.node_cuts[n].loop_axes.size(); ++l)
      if (!plan.node_cuts[n].loop_axes[l].empty()) {
        EXPECT_EQ(spaces[n].loops[l].name, "e") << g.node(n).name;
        ++expert_cuts;
      }
  }
  EXPECT_EQ(expert_cuts, 2 * 3);  // w1, w3, w2 in each of the 2 layers
  const PlanAnalysis a = analyze_plan(g, cluster, plan);
  int all_to_all = 0;
  for (const OpWork& w : a.ops)
    for (const CommOp& c : w.fwd_comm)
      if (c.kind == hardware::Collective::all_to_all) {
        ++all_to_all;
        EXPECT_GT(c.seconds, 0);
      }
  EXPECT_EQ(all_to_all, 2 * 2);  // tokens to their experts and back, each layer
  for (const ParamWork& p : a.params)
    if (g.tensor(p.tensor).name.find("experts.w") != std::string::npos) {
      EXPECT_TRUE(p.grad_sync.empty());
    }
  const StepEstimate e = estimate_step(a, plan, cluster);
  EXPECT_TRUE(std::isfinite(e.step_time_s));
  EXPECT_GT(e.step_time_s, 0);
  EXPECT_TRUE(e.fits);
  EXPECT_GT(e.model_flops, 0);
}

}  // namespace
}  // namespace symtensor::compiler
