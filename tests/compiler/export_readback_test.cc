// Exports read back with each target's own rules (#30): Megatron-LM flags through an
// argparse-style table of names and types (FRAMEWORKS.md 1a-1f: every flag known, typed
// right, none twice), torchtitan TOML through Python's tomllib (the flavor module through
// ast), DeepSpeed JSON through nlohmann::json. Each gives back the model's architecture,
// the parallel sizes, the batch triple (global = micro x dp x accumulation), recompute and
// precision, for a dense model, a GQA model, an MoE model and uneven pipeline stages.
// This file: Megatron-LM and DeepSpeed; export_readback_models_test.cc: DeepSeek-V3, gpt-oss,
// Llama 3.1, Nemotron; export_readback_torchtitan_test.cc: torchtitan.
#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/search/export_searched.h"
#include "tests/compiler/export_readback_fixture.h"

namespace symtensor::compiler {
namespace {

using namespace readback_testing;

// ---- Megatron-LM -------------------------------------------------------------------------
TEST_F(ExportReadback, MegatronDenseModel) {
  Graph g = preset("gpt-1.7b-tiny");
  const hardware::Cluster c = cluster("dgx-a100", 1, 4);
  const Plan p = plan(g, c, "tp=2,mb=2,recompute=selective");
  const ExportResult r = export_plan(ExportTarget::megatron, g, c, p);
  ASSERT_TRUE(r.exact()) << r.not_expressible.front();
  const MegatronArgs a = parse_megatron(r.config);
  EXPECT_EQ(a.i("num-layers"), config_.layers);
  EXPECT_EQ(a.i("hidden-size"), config_.hidden);
  EXPECT_EQ(a.i("ffn-hidden-size"), config_.intermediate);
  EXPECT_EQ(a.i("num-attention-heads"), config_.heads);
  EXPECT_FALSE(a.has("group-query-attention"));
  EXPECT_EQ(a.i("kv-channels"), config_.hidden / config_.heads);
  EXPECT_FALSE(a.has("swiglu"));
  EXPECT_EQ(a.s("normalization"), "LayerNorm");
  EXPECT_DOUBLE_EQ(a.d("norm-epsilon"), config_.norm_epsilon);
  EXPECT_EQ(a.s("position-embedding-type"), "learned_absolute");
  EXPECT_EQ(a.i("max-position-embeddings"), config_.seq);
  EXPECT_FALSE(a.has("untie-embeddings-and-output-weights"));  // GPT's head is the embedding
  EXPECT_FALSE(a.has("disable-bias-linear"));
  EXPECT_EQ(a.i("vocab-size"), config_.vocab);
  const MegatronParallel m = megatron_parallel(a);
  EXPECT_EQ(m.tp, 2);
  EXPECT_EQ(m.pp, 1);
  EXPECT_EQ(m.dp, 2);
  EXPECT_EQ(m.mbs, 2);
  EXPECT_EQ(m.gbs, 16);
  EXPECT_EQ(m.accumulation, p.micro_batches);
  EXPECT_EQ(a.s("recompute-granularity"), "selective");
  EXPECT_TRUE(a.has("bf16"));
}

TEST_F(ExportReadback, MegatronGroupedQueryModel) {
  models::Overrides o;
  o.kv_heads = 2;
  Graph g = preset("llama2-70b-tiny", o);
  const hardware::Cluster c = cluster("dgx-a100", 2, 4);
  const Plan p = plan(g, c, "tp=2,pp=2,sp=1,recompute=full,distopt=1,mb=1");
  const ExportResult r = export_plan(ExportTarget::megatron, g, c, p);
  ASSERT_TRUE(r.exact()) << r.not_expressible.front();
  const MegatronArgs a = parse_megatron(r.config);
  EXPECT_TRUE(a.has("group-query-attention"));
  EXPECT_EQ(a.i("num-query-groups"), 2);
  EXPECT_EQ(a.i("num-attention-heads"), config_.heads);
  EXPECT_EQ(a.i("kv-channels"), config_.hidden / config_.heads);
  EXPECT_EQ(a.i("ffn-hidden-size"), config_.intermediate);
  EXPECT_TRUE(a.has("swiglu"));
  EXPECT_EQ(a.s("normalization"), "RMSNorm");
  EXPECT_DOUBLE_EQ(a.d("norm-epsilon"), config_.norm_epsilon);
  EXPECT_EQ(a.s("position-embedding-type"), "rope");
  EXPECT_EQ(a.i("rotary-base"), static_cast<long long>(config_.rope_theta));
  EXPECT_TRUE(a.has("untie-embeddings-and-output-weights"));
  EXPECT_TRUE(a.has("disable-bias-linear"));
  EXPECT_FALSE(a.has("add-qkv-bias"));
  const MegatronParallel m = megatron_parallel(a);
  EXPECT_EQ(m.tp, 2);
  EXPECT_EQ(m.pp, 2);
  EXPECT_EQ(m.dp, 2);
  EXPECT_EQ(m.mbs * m.dp * m.accumulation, static_cast<long long>(p.global_batch));
  EXPECT_EQ(m.accumulation, p.micro_batches);
  EXPECT_TRUE(a.has("sequence-parallel"));
  EXPECT_TRUE(a.has("use-distributed-optimizer"));
  EXPECT_EQ(a.s("recompute-granularity"), "full");
  EXPECT_EQ(a.s("recompute-method"), "uniform");
  EXPECT_EQ(megatron_stages(a), recover_recipe(g, c, p).layers_per_stage);
}

// Qwen3's per-head q/k norms: --qk-layernorm (Megatron-LM trains a different model without
// it), qk_layernorm in NeMo's config; LLaMA has none.
TEST_F(ExportReadback, MegatronQkLayernorm) {
  models::Overrides o;
  o.layers = 2, o.hidden = 64, o.heads = 4, o.kv_heads = 2, o.intermediate = 96, o.vocab = 128;
  Graph g = preset("qwen3-8b", o);
  const hardware::Cluster c = cluster("dgx-a100", 1, 2);
  const Plan p = plan(g, c, "tp=2,pp=1,mb=1");
  const ExportResult r = export_plan(ExportTarget::megatron, g, c, p);
  EXPECT_TRUE(parse_megatron(r.config).has("qk-layernorm")) << r.config;
  EXPECT_NE(export_plan(ExportTarget::nemo, g, c, p).config.find("qk_layernorm=True"), std::string::npos);
  Graph llama = preset("llama2-70b-tiny");
  EXPECT_FALSE(parse_megatron(export_plan(ExportTarget::megatron, llama, c, plan(llama, c, "tp=2,pp=1,mb=1")).config).has("qk-layernorm"));
}

// FRAMEWORKS.md's LLaMA-3-8B reference flags, from a weight-free model of its shape.
TEST_F(ExportReadback, MegatronLlama3ReferenceFlags) {
  models::ModelConfig config = models::preset_config("llama2-7b");
  config.name = "llama3-8b", config.kv_heads = 8, config.intermediate = 14336, config.vocab = 128256;
  config.rope_theta = 500000, config.seq = 8192;
  Graph g = model(config, 64, 64);
  const hardware::Cluster c = cluster("dgx-h100", 1, 8);
  const ExportResult r = export_plan(ExportTarget::megatron, g, c, plan(g, c, "tp=8"));
  const MegatronArgs a = parse_megatron(r.config);
  const std::map<std::string, std::string> reference = {
      {"num-layers", "32"}, {"hidden-size", "4096"}, {"ffn-hidden-size", "14336"}, {"num-attention-heads", "32"},
      {"group-query-attention", ""}, {"num-query-groups", "8"}, {"kv-channels", "128"}, {"position-embedding-type", "rope"},
      {"rotary-base", "500000"}, {"normalization", "RMSNorm"}, {"swiglu", ""}, {"vocab-size", "128256"},
      {"untie-embeddings-and-output-weights", ""}};
  for (const auto& [flag, value] : reference) {
    ASSERT_TRUE(a.has(flag)) << flag;
    EXPECT_EQ(a.s(flag), value) << flag;
  }
  // The titan flavor is the bundled one, field by field.
  const ExportResult t = export_plan(ExportTarget::torchtitan, g, c, plan(g, c, "tp=8"));
  const nlohmann::json job = toml(t.config);
  if (job.is_null()) GTEST_SKIP() << "no python3 with tomllib";
  EXPECT_EQ(job["model"]["name"], "llama3");
  EXPECT_EQ(job["model"]["flavor"], "8B");
  EXPECT_EQ(extra(t, "symtensor_flavor.py"), "");
}

TEST_F(ExportReadback, MegatronMixtureOfExperts) {
  Graph g = preset("mixtral-8x7b-tiny");
  const hardware::Cluster c = cluster("dgx-a100", 2, 4);
  const Plan p = plan(g, c, "tp=2,sp=1,ep=4,etp=1,mb=1");
  const ExportResult r = export_plan(ExportTarget::megatron, g, c, p);
  ASSERT_TRUE(r.exact()) << r.not_expressible.front();
  const MegatronArgs a = parse_megatron(r.config);
  EXPECT_EQ(a.i("num-experts"), config_.experts);
  EXPECT_EQ(a.i("moe-router-topk"), config_.top_k);
  EXPECT_EQ(a.i("moe-ffn-hidden-size"), config_.intermediate);
  EXPECT_EQ(a.i("ffn-hidden-size"), config_.intermediate);
  EXPECT_EQ(a.s("moe-token-dispatcher-type"), "alltoall");
  // The zoo's buffers of exactly the even share (capacity factor 1) are priced as a dropless
  // dispatcher's balanced load, and launched dropless: no capacity factor.
  ASSERT_EQ(config_.capacity_factor, 1.0);
  EXPECT_FALSE(a.has("moe-expert-capacity-factor"));
  EXPECT_EQ(a.i("rotary-base"), 1000000);
  EXPECT_TRUE(a.has("group-query-attention"));
  const MegatronParallel m = megatron_parallel(a);
  const long long ep = a.i("expert-model-parallel-size"), etp = a.i("expert-tensor-parallel-size");
  EXPECT_EQ(ep, 4);
  EXPECT_EQ(etp, 1);
  EXPECT_EQ(a.world % (etp * ep * m.pp), 0);
  EXPECT_EQ(a.i("num-experts") % ep, 0);
  EXPECT_EQ(m.tp, 2);
  EXPECT_EQ(m.dp, 4);
  EXPECT_EQ(m.accumulation, p.micro_batches);
  EXPECT_FALSE(a.has("moe-flex-dispatcher-backend"));
  // Larger buffers are capacity routing, launched with the graph's factor.
  {
    models::Overrides o;
    o.capacity_factor = 1.25;
    Graph capacity = preset("mixtral-8x7b-tiny", o);
    const MegatronArgs routed = parse_megatron(export_plan(ExportTarget::megatron, capacity, c, plan(capacity, c, "tp=2,sp=1,ep=4,etp=1,mb=1")).config);
    EXPECT_DOUBLE_EQ(routed.d("moe-expert-capacity-factor"), 1.25);
  }
  // The flex dispatcher the plan was priced with (dispatcher=hybridep) is the one launched.
  const ExportResult flex = export_plan(ExportTarget::megatron, g, c, plan(g, c, "tp=2,sp=1,ep=4,etp=1,mb=1,dispatcher=hybridep"));
  ASSERT_TRUE(flex.exact()) << flex.not_expressible.front();
  const MegatronArgs f = parse_megatron(flex.config);
  EXPECT_EQ(f.s("moe-token-dispatcher-type"), "flex");
  EXPECT_EQ(f.s("moe-flex-dispatcher-backend"), "hybridep");
}

// Uneven stages as Megatron-LM is told them: its own first/last counts, or the embedding and
// the loss counted as layers (also with a virtual pipeline), never a per-chunk layer count.
TEST_F(ExportReadback, MegatronUnevenStages) {
  struct Case {
    int layers;
    int nodes, gpus;
    std::string knobs;
    std::vector<std::string> flags;
  };
  const std::vector<Case> cases = {
      {8, 2, 4, "tp=2,pp=2,first=3,last=5", {"decoder-first-pipeline-num-layers", "decoder-last-pipeline-num-layers"}},
      {6, 4, 2, "tp=2,pp=4", {"account-for-embedding-in-pipeline-split", "account-for-loss-in-pipeline-split"}},
      {6, 2, 4, "tp=2,pp=2,vp=2",
       {"account-for-embedding-in-pipeline-split", "account-for-loss-in-pipeline-split", "num-virtual-stages-per-pipeline-rank"}},
      {8, 2, 4, "tp=2,pp=2,vp=2", {"num-virtual-stages-per-pipeline-rank"}},
  };
  for (const Case& k : cases) {
    models::Overrides o;
    o.layers = k.layers;
    Graph g = preset("llama2-70b-tiny", o);
    const hardware::Cluster c = cluster("dgx-a100", k.nodes, k.gpus);
    const Plan p = plan(g, c, k.knobs);
    const ExportResult r = export_plan(ExportTarget::megatron, g, c, p);
    ASSERT_TRUE(r.exact()) << k.knobs << ": " << r.not_expressible.front();
    const MegatronArgs a = parse_megatron(r.config);
    for (const auto& f : k.flags) EXPECT_TRUE(a.has(f)) << k.knobs << ": no --" << f;
    const ParallelRecipe recipe = recover_recipe(g, c, p);
    EXPECT_EQ(megatron_stages(a), recipe.layers_per_stage) << k.knobs;
    // The recipe's knobs (the export's nearest plan) split the layers as the flags do.
    EXPECT_EQ(megatron_stage_layers(recipe.knobs(), k.layers), recipe.layers_per_stage) << k.knobs;
    EXPECT_EQ(a.i("num-virtual-stages-per-pipeline-rank", 1), p.virtual_stages) << k.knobs;
    megatron_parallel(a);
  }
}

TEST_F(ExportReadback, FirstAndLastStageCountsNeedAPipeline) {
  Graph g = preset("llama2-70b-tiny");
  const hardware::Cluster c = cluster("dgx-a100", 1, 4);
  try {
    plan(g, c, "tp=2,first=1");
    FAIL() << "first= without a pipeline accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("need pp > 1"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
}

TEST_F(ExportReadback, MegatronFsdpCheckpointFormat) {
  Graph g = preset("llama2-70b-tiny");
  const hardware::Cluster c = cluster("dgx-a100", 1, 8);
  const ExportResult r = export_plan(ExportTarget::megatron, g, c, plan(g, c, "tp=2,fsdp=3"));
  const MegatronArgs a = parse_megatron(r.config);
  EXPECT_TRUE(a.has("use-megatron-fsdp"));
  EXPECT_EQ(a.s("data-parallel-sharding-strategy"), "optim_grads_params");
  EXPECT_EQ(a.s("ckpt-format"), "fsdp_dtensor");
  megatron_parallel(a);  // no CUDA_DEVICE_MAX_CONNECTIONS=1 under Megatron-FSDP
}


// ---- DeepSpeed ---------------------------------------------------------------------------
TEST_F(ExportReadback, DeepSpeedBatchTripleZeroAndCheckpointing) {
  struct Case {
    std::string preset, knobs;
    int pp, zero;
    bool recompute;
  };
  for (const Case& k : std::vector<Case>{{"gpt-1.7b-tiny", "tp=2,mb=2", 1, 0, false},
                                         {"llama2-70b-tiny", "tp=1,pp=2,mb=1,recompute=full,distopt=1", 2, 1, true},
                                         {"llama2-70b-tiny", "fsdp=3,mb=1", 1, 3, false}}) {
    Graph g = preset(k.preset);
    const hardware::Cluster c = cluster("dgx-a100", 2, 4);
    const Plan p = plan(g, c, k.knobs);
    const ExportResult r = export_plan(ExportTarget::deepspeed, g, c, p);
    const nlohmann::json j = nlohmann::json::parse(r.config);
    const int tp = j.contains("tensor_parallel") ? j["tensor_parallel"]["autotp_size"].get<int>() : 1;
    const int pp = j["pipeline"]["stages"];
    const int dp = c.num_devices() / (tp * pp);
    EXPECT_EQ(pp, k.pp) << k.knobs;
    EXPECT_EQ(j["train_batch_size"].get<long long>(),
              j["train_micro_batch_size_per_gpu"].get<long long>() * j["gradient_accumulation_steps"].get<long long>() * dp)
        << k.knobs;
    EXPECT_EQ(j["train_batch_size"], 16);
    EXPECT_EQ(j["zero_optimization"]["stage"], k.zero) << k.knobs;
    EXPECT_EQ(j.contains("activation_checkpointing"), k.recompute) << k.knobs;
    EXPECT_EQ(j["bf16"]["enabled"], true);
    const std::string pipeline = extra(r, ".pipeline.py");
    EXPECT_NE(pipeline.find("NUM_STAGES = " + std::to_string(pp)), std::string::npos);
    EXPECT_NE(pipeline.find(std::string("PARTITION_METHOD = \"") + j["pipeline"]["partition"].get<std::string>()), std::string::npos);
  }
}


}  // namespace
}  // namespace symtensor::compiler
