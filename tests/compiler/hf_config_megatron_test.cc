// A Qwen3-MoE read from a Hugging Face config.json (#31) through the importer and the
// Megatron-LM generator with expert parallelism: the experts are cut over the ep ranks, the
// tokens cross by all-to-all, and the plan prices (step time, memory) like the zoo's Mixtral.
// A tiny DeepSeek-V3 (multi-head latent attention, dense first layer, routed and shared
// experts): Megatron's tensor parallelism keeps the down projections whole and cuts the up
// projections and the heads; its plans under data parallelism and megatron tp=2 are written
// as sharded ONNX and proven equal to the model in ONNX Runtime (`symtensor verify`). A tiny
// gpt-oss (attention sinks, a sliding and a full layer, biased clamped-SwiGLU experts) likewise,
// and a tiny Nemotron (LayerNorm1P, squared-ReLU MLP, rotary on half of each head).
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "onnx_models/hf_config.h"  // protobuf before GiNaC (CLN's Mutable macro)
#include "compiler/cost/plan_analysis.h"
#include "compiler/cost/step_estimate.h"
#include "compiler/analysis/transformer_structure.h"
#include "compiler/strategies/megatron.h"
#include "hardware/collectives.h"
#include "tests/compiler/cli_test_util.h"
#include "tests/compiler/strategies_test_util.h"
#include "tests/onnx_models/tiny_hf_configs.h"
#include "tests/temp_path.h"

namespace symtensor::compiler {
namespace {

using symtensor::testing::kDeepSeekV3Tiny;
using symtensor::testing::kGptOssTiny;
using symtensor::testing::kNemotronTiny;

// Whether the plan cuts node n over the mesh axis.
bool cut_on(const Plan& plan, NodeId n, int axis) {
  for (const auto& axes : plan.node_cuts[n].loop_axes)
    for (int a : axes)
      if (a == axis) return true;
  return false;
}

// A Hugging Face config.json through `models --hf-config` and the importer, at batch 8, seq 8.
Graph hf_graph(const std::string& json, const std::string& name) {
  const std::string path = symtensor::testing::temp_path(name + ".json");
  std::ofstream(path) << json;
  ImportOptions o;
  o.bindings = {{"batch", 8.0}, {"seq", 8.0}};
  o.warn_opaque = false;
  return import_onnx_model(models::build_model(models::load_hf_config(path)), name, o);
}

Graph qwen3_moe_tiny_graph() {
  const std::string path = symtensor::testing::temp_path("qwen3_moe_tiny_config.json");
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

std::string deepseek_tiny_config() {
  const std::string path = symtensor::testing::temp_path("deepseek_v3_tiny.json");
  std::ofstream(path) << kDeepSeekV3Tiny;
  return path;
}

// A tiny hf-config model under Megatron's tp=2 on 4 GPUs: its plan (valid), its transformer
// structure and which operators the tensor-parallel axis cuts.
struct TinyTensorParallel {
  Graph g;
  hardware::Cluster cluster = testing::dgx(1, 4);
  MegatronKnobs knobs = parse_megatron_knobs("tp=2");
  Plan plan;
  TransformerStructure s;
  int tp_axis = -1;

  TinyTensorParallel(const char* config, const std::string& name) : g(hf_graph(config, name)) {
    plan = make_megatron_plan(g, cluster, knobs, StrategyOptions{});
    testing::expect_valid_plan(g, cluster, plan);
    s = find_transformer_structure(g, node_iteration_spaces(g));
    tp_axis = megatron_mesh(cluster, knobs).tp_axis;
  }
  bool cut_on_tp(NodeId n) const { return cut_on(plan, n, tp_axis); }
  // The plan prices to a finite step that fits.
  void expect_priced() {
    const StepEstimate e = estimate_step(analyze_plan(g, cluster, plan), plan, cluster);
    EXPECT_TRUE(std::isfinite(e.step_time_s));
    EXPECT_TRUE(e.fits);
  }
};

TEST(HfConfigMegatron, DeepSeekV3TinyKeepsTheDownProjectionsWhole) {
  TinyTensorParallel t(kDeepSeekV3Tiny, "deepseek-v3-tiny");
  const Graph& g = t.g;
  ASSERT_EQ(t.s.layers(), 3);
  ASSERT_EQ(t.s.down_projections.size(), 6u);  // q_a_proj, kv_a_proj_with_mqa
  for (NodeId n : t.s.down_projections) EXPECT_FALSE(t.cut_on_tp(n)) << g.node(n).name;
  for (NodeId n : t.s.latent_norms) EXPECT_FALSE(t.cut_on_tp(n)) << g.node(n).name;
  for (NodeId n : t.s.column) EXPECT_TRUE(t.cut_on_tp(n)) << g.node(n).name;
  for (NodeId n : t.s.attention) EXPECT_TRUE(t.cut_on_tp(n)) << g.node(n).name;
  t.expect_priced();
}

// `symtensor models --hf-config`, `compile --onnx` and `verify` (ONNX Runtime, rtol 1e-4).
class DeepSeekVerify : public symtensor::testing::CliTest {
 protected:
  // What the last command printed, stdout then stderr.
  std::string log() const { return out_ + err_; }
  // m.onnx compiled on 2 A100 under each strategy, its plan verified in ONNX Runtime.
  void expect_plans_verify(const std::vector<std::string>& strategies) {
    for (const std::string& strategy : strategies) {
      const std::string out = path("plan");
      std::filesystem::remove_all(out);
      ASSERT_EQ(run("compile " + path("m.onnx") + " --cluster dgx-a100 --gpus 2 --bind batch=4,seq=8 " + strategy +
                    " --onnx -o " + out),
                0)
          << strategy << "\n" << log();
      ASSERT_EQ(run("verify " + path("m.onnx") + " " + out + " --rtol 1e-4"), 0) << strategy << "\n" << log();
      EXPECT_NE(log().find("verify: OK"), std::string::npos) << strategy << "\n" << log();
    }
  }
};

TEST_F(DeepSeekVerify, TinyV3PlansAreEqualToTheModelInOnnxRuntime) {
  ASSERT_EQ(run("models --hf-config " + deepseek_tiny_config() + " --weights random -o " + path("m.onnx")), 0) << log();
  EXPECT_NE(log().find("latent attention"), std::string::npos) << log();
  // tp=2,sp=1,ep=2,etp=1: the experts over the tensor-parallel ranks, each dispatching its own
  // part of the sequence (the capacity slots cut over tp).
  expect_plans_verify({"--strategy dp", "--megatron tp=2", "--megatron tp=2,sp=1", "--megatron tp=2,sp=1,ep=2,etp=1"});
}

// seq 8 > window 4: the sliding layer's window is in force in the verified outputs.
TEST_F(DeepSeekVerify, TinyGptOssPlansAreEqualToTheModelInOnnxRuntime) {
  const std::string config = path("gpt_oss.json");
  std::ofstream(config) << kGptOssTiny;
  ASSERT_EQ(run("models --hf-config " + config + " --weights random -o " + path("m.onnx")), 0) << log();
  EXPECT_NE(log().find("attention sinks"), std::string::npos) << log();
  expect_plans_verify({"--strategy dp", "--megatron tp=2"});
}

// Megatron's pairs: q, k, v and up_proj column-parallel, o_proj and down_proj row-parallel,
// the attention cut on its heads; the LayerNorm1P weights and the Relu stay whole per rank.
TEST(HfConfigMegatron, NemotronTinyCutsItsPairsAndHeads) {
  TinyTensorParallel t(kNemotronTiny, "nemotron-tiny");
  const Graph& g = t.g;
  ASSERT_EQ(t.s.layers(), 2);
  EXPECT_EQ(t.s.column.size(), 8u);
  EXPECT_EQ(t.s.row.size(), 4u);
  for (NodeId n : t.s.column) EXPECT_TRUE(t.cut_on_tp(n)) << g.node(n).name;
  for (NodeId n : t.s.row) EXPECT_TRUE(t.cut_on_tp(n)) << g.node(n).name;
  for (NodeId n : t.s.attention) EXPECT_TRUE(t.cut_on_tp(n)) << g.node(n).name;
  int relus = 0;
  for (NodeId n = 0; n < static_cast<NodeId>(g.nodes().size()); ++n)
    if (g.node(n).op_type == "Relu") {  // between up and down
      ++relus;
      EXPECT_TRUE(t.cut_on_tp(n)) << g.node(n).name;
    }
  EXPECT_EQ(relus, 2);
  t.expect_priced();
}

// seq 8 with rotary on 16 of 32 dims: the passed half and the rotated half both in the outputs.
TEST_F(DeepSeekVerify, TinyNemotronPlansAreEqualToTheModelInOnnxRuntime) {
  const std::string config = path("nemotron.json");
  std::ofstream(config) << kNemotronTiny;
  ASSERT_EQ(run("models --hf-config " + config + " --weights random -o " + path("m.onnx")), 0) << log();
  EXPECT_NE(log().find("LayerNorm1P"), std::string::npos) << log();
  expect_plans_verify({"--strategy dp", "--megatron tp=2", "--megatron tp=2,sp=1"});
}

}  // namespace
}  // namespace symtensor::compiler
