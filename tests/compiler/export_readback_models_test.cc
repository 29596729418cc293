// Exports read back (export_readback_test.cc says how) for the models with features a target
// may lack: DeepSeek-V3, gpt-oss, Llama 3.1, Nemotron.
#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/analysis/model_stats.h"
#include "compiler/analysis/transformer_structure.h"
#include "compiler/search/export_searched.h"
#include "tests/compiler/export_readback_fixture.h"
#include "tests/onnx_models/tiny_hf_configs.h"

namespace symtensor::compiler {
namespace {

using symtensor::testing::kGptOssTiny;
using symtensor::testing::kNemotronTiny;
using namespace readback_testing;

// ---- DeepSeek-V3 (#30, #31) --------------------------------------------------------------
// A tiny DeepSeek-V3 from models --hf-config: multi-head latent attention with YaRN (the
// original context 4096 and betas 32/1 Megatron-Core's MLA assumes), one dense layer then
// two MoE layers of 16 routed experts and one shared, V3's sigmoid router with its bias,
// 2 of 4 groups ranked by their best 2 = top_k / group_topk scores, weights x 2.5.
constexpr const char* kDeepSeekTiny = R"({"model_type": "deepseek_v3", "hidden_size": 64, "intermediate_size": 96,
    "moe_intermediate_size": 32, "num_hidden_layers": 3, "first_k_dense_replace": 1, "num_attention_heads": 4,
    "q_lora_rank": 32, "kv_lora_rank": 16, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 12,
    "n_routed_experts": 16, "num_experts_per_tok": 4, "n_shared_experts": 1, "n_group": 4, "topk_group": 2,
    "vocab_size": 128, "max_position_embeddings": 64, "routed_scaling_factor": 2.5, "rms_norm_eps": 1e-06,
    "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 4, "mscale": 1.0, "mscale_all_dim": 1.0,
                     "original_max_position_embeddings": 4096, "type": "yarn"}})";

class DeepSeekExport : public ExportReadback {
 protected:
  Graph deepseek(std::string json = kDeepSeekTiny) {
    const std::string path = file("deepseek_v3_tiny.json", json);
    models::ModelConfig config = models::load_hf_config(path);
    config.name = "deepseek-v3-tiny";
    return model(config);
  }
  // The keyword arguments of `model_config_kwargs = dict(...)` in the NeMo module, each
  // evaluated alone (moe_layer_freq is a list expression).
  nlohmann::json nemo_model(const std::string& text) {
    const auto j = python_json(
        "import ast, json, sys\n"
        "tree = ast.parse(open(sys.argv[1]).read())\n"
        "call = [n.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == 'model_config_kwargs'][0]\n"
        "print(json.dumps({k.arg: eval(compile(ast.Expression(k.value), 'kw', 'eval'), {'__builtins__': {}}) "
        "for k in call.keywords}))\n",
        file("nemo_plan.py", text));
    return j.value_or(nlohmann::json());
  }
};

TEST_F(DeepSeekExport, MegatronWritesLatentAttentionRouterAndLayerMix) {
  Graph g = deepseek();
  const hardware::Cluster c = cluster("dgx-a100", 1, 4);
  const Plan p = plan(g, c, "tp=2,sp=1,ep=2,etp=1,mb=1");
  const ExportResult r = export_plan(ExportTarget::megatron, g, c, p);
  ASSERT_TRUE(r.exact()) << r.not_expressible.front() << "\n" << r.config;
  const MegatronArgs a = parse_megatron(r.config);
  EXPECT_EQ(a.i("num-layers"), 3);
  EXPECT_EQ(a.i("hidden-size"), 64);
  EXPECT_EQ(a.i("num-attention-heads"), 4);
  EXPECT_FALSE(a.has("group-query-attention"));  // Megatron asserts on it with MLA
  EXPECT_TRUE(a.has("multi-latent-attention"));
  EXPECT_EQ(a.i("q-lora-rank"), config_.q_lora_rank);
  EXPECT_EQ(a.i("kv-lora-rank"), config_.kv_lora_rank);
  EXPECT_EQ(a.i("qk-head-dim"), config_.qk_nope_head_dim);
  EXPECT_EQ(a.i("qk-pos-emb-head-dim"), config_.qk_rope_head_dim);
  EXPECT_EQ(a.i("v-head-dim"), config_.v_head_dim);
  EXPECT_TRUE(a.has("qk-layernorm"));  // MLA's latent norms
  EXPECT_EQ(a.s("position-embedding-type"), "rope");
  EXPECT_EQ(a.s("rope-type"), "yarn");
  EXPECT_EQ(a.i("rotary-base"), static_cast<long long>(config_.rope_theta));
  EXPECT_DOUBLE_EQ(a.d("rotary-scaling-factor"), config_.rope_scaling.factor);
  EXPECT_DOUBLE_EQ(a.d("mscale"), config_.rope_scaling.mscale);
  EXPECT_DOUBLE_EQ(a.d("mscale-all-dim"), config_.rope_scaling.mscale_all_dim);
  EXPECT_EQ(a.s("normalization"), "RMSNorm");
  EXPECT_DOUBLE_EQ(a.d("norm-epsilon"), 1e-6);
  EXPECT_TRUE(a.has("swiglu"));
  // The dense layer's width and the experts'; the shared experts' total width.
  EXPECT_EQ(a.i("ffn-hidden-size"), config_.dense_intermediate);
  EXPECT_EQ(a.i("moe-ffn-hidden-size"), config_.intermediate);
  EXPECT_EQ(a.i("moe-shared-expert-intermediate-size"), config_.shared_experts * config_.intermediate);
  EXPECT_EQ(a.i("num-experts"), config_.experts);
  EXPECT_EQ(a.i("moe-router-topk"), config_.top_k);
  const auto layers = layer_pattern(a.s("moe-layer-freq"), 3);
  ASSERT_TRUE(layers.has_value());
  EXPECT_EQ(*layers, (std::vector<int>{0, 1, 1}));
  EXPECT_EQ(a.s("moe-router-score-function"), "sigmoid");
  EXPECT_TRUE(a.has("moe-router-enable-expert-bias"));
  EXPECT_FALSE(a.has("moe-router-pre-softmax"));
  EXPECT_EQ(a.i("moe-router-num-groups"), config_.expert_groups);
  EXPECT_EQ(a.i("moe-router-group-topk"), config_.top_groups);
  EXPECT_EQ(config_.top_k / a.i("moe-router-group-topk"), config_.group_top);  // Megatron's group ranking
  EXPECT_DOUBLE_EQ(a.d("moe-router-topk-scaling-factor"), config_.routed_scaling);
  EXPECT_EQ(a.i("vocab-size"), config_.vocab);
  const MegatronParallel m = megatron_parallel(a);
  EXPECT_EQ(m.tp, 2);
  EXPECT_EQ(a.i("expert-model-parallel-size"), 2);
  EXPECT_EQ(a.i("num-experts") % a.i("expert-model-parallel-size"), 0);
  EXPECT_EQ(a.i("num-experts") % a.i("moe-router-num-groups"), 0);
  EXPECT_TRUE(a.has("sequence-parallel"));
  // NeMo: the same fields under Megatron-Core's config names.
  const ExportResult n = export_plan(ExportTarget::nemo, g, c, p);
  EXPECT_TRUE(n.exact()) << n.not_expressible.front();
  const nlohmann::json k = nemo_model(n.config);
  if (k.is_null()) GTEST_SKIP() << "no python3";
  EXPECT_EQ(k["multi_latent_attention"], true);
  EXPECT_EQ(k["q_lora_rank"], config_.q_lora_rank);
  EXPECT_EQ(k["kv_lora_rank"], config_.kv_lora_rank);
  EXPECT_EQ(k["qk_head_dim"], config_.qk_nope_head_dim);
  EXPECT_EQ(k["qk_pos_emb_head_dim"], config_.qk_rope_head_dim);
  EXPECT_EQ(k["v_head_dim"], config_.v_head_dim);
  EXPECT_EQ(k["qk_layernorm"], true);
  EXPECT_EQ(k["rope_type"], "yarn");
  EXPECT_DOUBLE_EQ(k["rotary_scaling_factor"].get<double>(), config_.rope_scaling.factor);
  EXPECT_EQ(k["ffn_hidden_size"], config_.dense_intermediate);
  EXPECT_EQ(k["moe_ffn_hidden_size"], config_.intermediate);
  EXPECT_EQ(k["moe_shared_expert_intermediate_size"], config_.shared_experts * config_.intermediate);
  EXPECT_EQ(k["moe_layer_freq"], nlohmann::json::array({0, 1, 1}));
  EXPECT_EQ(k["moe_router_score_function"], "sigmoid");
  EXPECT_EQ(k["moe_router_enable_expert_bias"], true);
  EXPECT_EQ(k["moe_router_num_groups"], config_.expert_groups);
  EXPECT_EQ(k["moe_router_group_topk"], config_.top_groups);
  EXPECT_DOUBLE_EQ(k["moe_router_topk_scaling_factor"].get<double>(), config_.routed_scaling);
  EXPECT_EQ(k["num_moe_experts"], config_.experts);
}

// What Megatron-LM cannot be told makes the export inexact, one line each, never "exact":
// the tiny config of the ONNX Runtime test (original context 16; groups ranked by their best
// 2 scores where Megatron takes top_k / group_topk = 1).
TEST_F(DeepSeekExport, MegatronSaysWhatItCannotExpress) {
  std::string json = kDeepSeekTiny;
  const std::string top4 = "\"num_experts_per_tok\": 4";
  json.replace(json.find(top4), top4.size(), "\"num_experts_per_tok\": 2");
  json.replace(json.find("4096"), 4, "16");
  Graph g = deepseek(json);
  const hardware::Cluster c = cluster("dgx-a100", 1, 2);
  const Plan p = plan(g, c, "tp=2,mb=1");
  for (ExportTarget t : {ExportTarget::megatron, ExportTarget::nemo}) {
    const ExportResult r = export_plan(t, g, c, p);
    ASSERT_FALSE(r.exact()) << to_string(t);
    EXPECT_FALSE(r.nearest.has_value());  // the plan itself is expressed
    int yarn = 0, groups = 0;
    for (const auto& line : r.not_expressible) {
      EXPECT_EQ(line.find('\n'), std::string::npos);
      yarn += line.find("YaRN correction range") != std::string::npos && line.find("original context 4096") == std::string::npos;
      groups += line.find("best 2 scores") != std::string::npos && line.find("2/2 = 1") != std::string::npos;
    }
    EXPECT_EQ(yarn, 1) << fmt::format("{}", fmt::join(r.not_expressible, "\n"));
    EXPECT_EQ(groups, 1) << fmt::format("{}", fmt::join(r.not_expressible, "\n"));
    EXPECT_NE(export_summary(r, "x").find("not expressible"), std::string::npos);
    EXPECT_EQ(export_summary(r, "x").find("exact\n"), std::string::npos);
  }
  // Megatron's flags are still the model's (the file says what it could not write).
  const MegatronArgs a = parse_megatron(export_plan(ExportTarget::megatron, g, c, p).config);
  EXPECT_EQ(a.i("kv-lora-rank"), 16);
  EXPECT_EQ(a.i("moe-router-topk"), 2);
}

// `models --mtp 1`: Megatron-LM is told --num-layers of the decoder and --mtp-num-layers 1,
// with the MTP layer on the last pipeline stage beside that stage's own decoder layer, as
// Megatron-Core places it; NeMo the same fields; torchtitan and DeepSpeed's pipeline name it
// among what they lack.
TEST_F(DeepSeekExport, MultiTokenPredictionIsToldAsItsOwnLayersOnTheLastStage) {
  models::ModelConfig config = models::load_hf_config(file("deepseek_v3_tiny.json", kDeepSeekTiny));
  config.name = "deepseek-v3-tiny-mtp";
  config.mtp_layers = 1;
  Graph g = model(config);
  const hardware::Cluster c = cluster("dgx-a100", 1, 3);
  const Plan p = plan(g, c, "tp=1,pp=3,mb=1");
  const TransformerStructure s = find_transformer_structure(g, node_iteration_spaces(g));
  ASSERT_EQ(s.layers(), 4);
  ASSERT_EQ(s.prediction_layers(), 1);
  for (std::size_t l = 0; l < s.layer_anchors.size(); ++l)  // decoder layers 0, 1, 2 on stages 0, 1, 2; MTP on 2
    EXPECT_EQ(p.stage_of_node[s.layer_anchors[l]], std::min<int>(static_cast<int>(l), 2)) << l;
  EXPECT_EQ(s.layer_anchors.back(), s.prediction_anchors[0]);
  const ExportResult r = export_plan(ExportTarget::megatron, g, c, p);
  ASSERT_TRUE(r.exact()) << r.not_expressible.front() << "\n" << r.config;
  const MegatronArgs a = parse_megatron(r.config);
  EXPECT_EQ(a.i("num-layers"), 3);
  EXPECT_EQ(a.i("mtp-num-layers"), 1);
  EXPECT_EQ(a.i("pipeline-model-parallel-size"), 3);
  EXPECT_FALSE(a.has("decoder-last-pipeline-num-layers"));  // 1 + 1 + 1 decoder layers, MTP beside the last
  const auto layers = layer_pattern(a.s("moe-layer-freq"), 3);
  ASSERT_TRUE(layers.has_value());
  EXPECT_EQ(*layers, (std::vector<int>{0, 1, 1}));
  const ExportResult n = export_plan(ExportTarget::nemo, g, c, p);
  EXPECT_TRUE(n.exact()) << n.not_expressible.front();
  const nlohmann::json k = nemo_model(n.config);
  if (k.is_null()) GTEST_SKIP() << "no python3";
  EXPECT_EQ(k["num_layers"], 3);
  EXPECT_EQ(k["mtp_num_layers"], 1);
  const ExportResult t = export_plan(ExportTarget::torchtitan, g, c, p);
  int named = 0;
  for (const auto& line : t.not_expressible) named += line.find("1 multi-token prediction layer") != std::string::npos;
  EXPECT_EQ(named, 1);
  // DeepSpeed's even type:transformer split would count the MTP block among the stages' layers.
  const ExportResult d = export_plan(ExportTarget::deepspeed, g, c, p);
  named = 0;
  for (const auto& line : d.not_expressible) named += line.find("1 multi-token prediction layer under pp=3") != std::string::npos;
  EXPECT_EQ(named, 1) << d.config;
}

// torchtitan's llama3 builds none of it; DeepSpeed's AutoTP split of MLA is not documented;
// JAX's PartitionSpecs name no model flags.
TEST_F(DeepSeekExport, OtherTargetsClaimNoExactnessTheyLack) {
  Graph g = deepseek();
  const hardware::Cluster c = cluster("dgx-a100", 1, 4);
  const Plan p = plan(g, c, "tp=2,pp=1,mb=1,sp=0");  // fixed: AutoTP writes it (the nearest plan of another might not use tp)
  const ExportResult t = export_plan(ExportTarget::torchtitan, g, c, p);
  ASSERT_FALSE(t.exact());
  const auto names = [](const ExportResult& r, const std::string& what) {
    int n = 0;
    for (const auto& line : r.not_expressible) n += line.find(what) != std::string::npos;
    return n;
  };
  EXPECT_EQ(names(t, "multi-head latent attention (q/kv latents 32/16"), 1);
  EXPECT_EQ(names(t, "shared experts of width 32"), 1);
  EXPECT_EQ(names(t, "dense and MoE layers mixed ([0]*1+[1]*2)"), 1);
  EXPECT_EQ(names(t, "a router of sigmoid scores with an expert bias, limited to 2 of 4 groups, weights x2.5"), 1);
  const ExportResult d = export_plan(ExportTarget::deepspeed, g, c, p);
  EXPECT_EQ(names(d, "multi-head latent attention under AutoTP tp=2"), 1) << ::testing::PrintToString(d.not_expressible);
  const ExportResult j = export_plan(ExportTarget::jax, g, c, p);
  EXPECT_EQ(names(j, "model: "), 0);
}

// ---- gpt-oss: what Megatron-LM / NeMo and torchtitan are not told, one line each ---------

TEST_F(ExportReadback, GptOssExportsSayWhatTheyCannotWrite) {
  Graph g = hf_model(kGptOssTiny, "gpt-oss-tiny");
  const hardware::Cluster c = cluster("dgx-a100", 1, 2);
  const Plan p = plan(g, c, "tp=2,mb=1");
  const auto names = [](const ExportResult& r, const std::string& what) {
    int n = 0;
    for (const auto& line : r.not_expressible) n += line.find(what) != std::string::npos;
    return n;
  };
  for (ExportTarget t : {ExportTarget::megatron, ExportTarget::nemo, ExportTarget::torchtitan}) {
    const ExportResult r = export_plan(t, g, c, p);
    ASSERT_FALSE(r.exact()) << to_string(t);
    const std::string all = fmt::format("{}", fmt::join(r.not_expressible, "\n"));
    for (const auto& line : r.not_expressible) EXPECT_EQ(line.find('\n'), std::string::npos);
    EXPECT_EQ(names(r, "model: attention sinks (a learned logit per head in each softmax's denominator) in 2 of 2 layers"), 1) << all;
    EXPECT_EQ(names(r, "model: sliding-window attention of 4 tokens in 1 of 2 layers"), 1) << all;
    EXPECT_EQ(names(r, "model: the clamped SwiGLU of one interleaved gate/up projection"), 1) << all;
    EXPECT_EQ(names(r, "model: a bias on the router's logits"), 1) << all;
    EXPECT_EQ(names(r, "model: a YaRN-scaled rotary table (cos and sin x1.1386"), 1) << all;  // 0.1 ln 4 + 1
    EXPECT_NE(export_summary(r, "x").find("not expressible"), std::string::npos);
  }
  // The flags Megatron-LM is given are still the model's.
  const MegatronArgs a = parse_megatron(export_plan(ExportTarget::megatron, g, c, p).config);
  EXPECT_EQ(a.i("num-layers"), 2);
  EXPECT_EQ(a.i("num-attention-heads"), 4);
  EXPECT_EQ(a.i("num-query-groups"), 2);
  EXPECT_EQ(a.i("kv-channels"), 16);
  EXPECT_EQ(a.i("num-experts"), 4);
  EXPECT_EQ(a.i("moe-router-topk"), 2);
  EXPECT_EQ(a.i("moe-ffn-hidden-size"), 48);
  EXPECT_TRUE(a.has("swiglu"));
  EXPECT_FALSE(a.has("disable-bias-linear"));  // every linear biased
}

// ---- Llama 3.1: its rope scaling read from the frequency table, --use-rope-scaling ----

TEST_F(ExportReadback, Llama31WritesRopeScalingAndLlama3DoesNot) {
  const hardware::Cluster c = cluster("dgx-a100", 1, 2);
  // Small models with Llama 3.1's head dim (128) and rope (theta 500000, x8 beyond 8192
  // positions): its table keeps the first 28 of 64 frequencies and divides the last ones by 8.
  models::Overrides o;
  o.layers = 2, o.hidden = 256, o.heads = 2, o.kv_heads = 2, o.intermediate = 512, o.vocab = 256;
  for (const auto& [name, factor] : std::vector<std::pair<std::string, double>>{{"llama3.1-8b", 8}, {"llama3-8b", 0}}) {
    Graph g = preset(name, o);
    const Plan p = plan(g, c, "tp=2,mb=1");
    const ExportResult r = export_plan(ExportTarget::megatron, g, c, p);
    const MegatronArgs a = parse_megatron(r.config);
    EXPECT_EQ(a.has("use-rope-scaling"), factor > 0) << name << "\n" << r.config;
    if (factor > 0) {
      EXPECT_DOUBLE_EQ(a.d("rope-scaling-factor"), factor) << name;
    }
    EXPECT_EQ(a.i("rotary-base"), 500000) << name;
    const ExportResult n = export_plan(ExportTarget::nemo, g, c, p);
    EXPECT_EQ(n.config.find("rope_scaling=True") != std::string::npos, factor > 0) << name << "\n" << n.config;
  }
}

// ---- Nemotron: --squared-relu, LayerNorm with --apply-layernorm-1p, --rotary-percent 0.5 ----

using NemotronExport = DeepSeekExport;  // its NeMo reader

TEST_F(NemotronExport, MegatronWritesSquaredReluLayerNorm1pAndRotaryPercent) {
  Graph g = hf_model(kNemotronTiny, "nemotron-tiny");
  const hardware::Cluster c = cluster("dgx-a100", 1, 2);
  const Plan p = plan(g, c, "tp=2,mb=1");
  const ExportResult r = export_plan(ExportTarget::megatron, g, c, p);
  ASSERT_TRUE(r.exact()) << r.not_expressible.front() << "\n" << r.config;
  const MegatronArgs a = parse_megatron(r.config);
  EXPECT_TRUE(a.has("squared-relu")) << r.config;
  EXPECT_FALSE(a.has("swiglu"));
  EXPECT_EQ(a.s("normalization"), "LayerNorm");
  EXPECT_TRUE(a.has("apply-layernorm-1p"));
  EXPECT_DOUBLE_EQ(a.d("norm-epsilon"), 1e-5);
  EXPECT_EQ(a.s("position-embedding-type"), "rope");
  EXPECT_DOUBLE_EQ(a.d("rotary-percent"), 0.5);
  EXPECT_EQ(a.i("rotary-base"), 10000);
  EXPECT_EQ(a.i("num-attention-heads"), 4);
  EXPECT_TRUE(a.has("group-query-attention"));
  EXPECT_EQ(a.i("num-query-groups"), 2);
  EXPECT_EQ(a.i("kv-channels"), 32);  // heads x head_dim != hidden (Minitron-8B's shape)
  EXPECT_EQ(a.i("ffn-hidden-size"), 96);
  EXPECT_TRUE(a.has("disable-bias-linear"));
  EXPECT_FALSE(a.has("add-qkv-bias"));
  EXPECT_TRUE(a.has("untie-embeddings-and-output-weights"));
  EXPECT_EQ(megatron_parallel(a).tp, 2);
  // A LLaMA has none of the three.
  Graph llama = preset("llama2-70b-tiny");
  const MegatronArgs l = parse_megatron(export_plan(ExportTarget::megatron, llama, c, plan(llama, c, "tp=2,mb=1")).config);
  EXPECT_FALSE(l.has("squared-relu") || l.has("apply-layernorm-1p") || l.has("rotary-percent"));
  // NeMo: Megatron-Core's field names; torchtitan's llama3 builds none of it, one line each.
  const ExportResult n = export_plan(ExportTarget::nemo, g, c, p);
  EXPECT_TRUE(n.exact()) << n.not_expressible.front();
  EXPECT_NE(n.config.find("activation_func=squared_relu"), std::string::npos) << n.config;
  const ExportResult t = export_plan(ExportTarget::torchtitan, g, c, p);
  ASSERT_FALSE(t.exact());
  const std::string gaps = fmt::format("{}", fmt::join(t.not_expressible, "\n"));
  for (const char* f : {"model: the squared-ReLU MLP (relu(x)^2, no gate)", "model: LayerNorm of (1 + weight) (zero-centered gamma)",
                        "model: rotary embeddings on 0.5 of each head"})
    EXPECT_NE(gaps.find(f), std::string::npos) << f << "\n" << gaps;
  const nlohmann::json k = nemo_model(n.config);
  if (k.is_null()) GTEST_SKIP() << "no python3";
  EXPECT_EQ(k["gated_linear_unit"], false);
  EXPECT_EQ(k["normalization"], "LayerNorm");
  EXPECT_EQ(k["layernorm_zero_centered_gamma"], true);
  EXPECT_DOUBLE_EQ(k["rotary_percent"].get<double>(), 0.5);
  EXPECT_EQ(k["kv_channels"], 32);
}

}  // namespace
}  // namespace symtensor::compiler
