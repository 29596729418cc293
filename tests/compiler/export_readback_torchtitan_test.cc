// torchtitan exports read back through tomllib and ast (export_readback_test.cc says how).
#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/search/export_searched.h"
#include "hardware/stack.h"
#include "tests/compiler/export_readback_fixture.h"

namespace symtensor::compiler {
namespace {

using namespace readback_testing;

// ---- torchtitan --------------------------------------------------------------------------
struct TitanBatch {
  long long dp, local, global, microbatch, accumulation;
};
// torchtitan's train.py: accumulation = global / (local x dp); a pipeline runs
// local / pipeline_parallel_microbatch_size micro-batches per accumulation step.
TitanBatch titan_batch(const nlohmann::json& job) {
  const auto& p = job["parallelism"];
  const auto& t = job["training"];
  TitanBatch b{};
  b.dp = p["data_parallel_replicate_degree"].get<long long>() * p["data_parallel_shard_degree"].get<long long>();
  b.local = t["local_batch_size"], b.global = t["global_batch_size"];
  EXPECT_EQ(b.global % (b.local * b.dp), 0);
  const bool pipeline = p["pipeline_parallel_degree"].get<int>() > 1;
  b.microbatch = pipeline ? p["pipeline_parallel_microbatch_size"].get<long long>() : b.local;
  EXPECT_EQ(b.local % b.microbatch, 0);
  b.accumulation = b.global / (b.local * b.dp) * (b.local / b.microbatch);
  return b;
}

TEST_F(ExportReadback, TorchtitanBatchIsPerRankMicroBatch) {
  // The case: FSDP over every rank with accumulation; local_batch_size is the micro-batch.
  Graph g = preset("llama2-70b-tiny");
  const hardware::Cluster c = cluster("dgx-a100", 1, 8);
  const Plan p = plan(g, c, "fsdp=3,mb=1");
  const ExportResult r = export_plan(ExportTarget::torchtitan, g, c, p);
  const nlohmann::json job = toml(r.config);
  if (job.is_null()) GTEST_SKIP() << "no python3 with tomllib";
  const TitanBatch b = titan_batch(job);
  EXPECT_EQ(job["parallelism"]["data_parallel_shard_degree"], 8);
  EXPECT_EQ(b.local, 1);
  EXPECT_EQ(b.global, 16);
  EXPECT_EQ(b.accumulation, 2);
  EXPECT_EQ(b.microbatch * b.dp * b.accumulation, b.global);
}

TEST_F(ExportReadback, TorchtitanGroupedQueryWithPipeline) {
  models::Overrides o;
  o.layers = 8, o.kv_heads = 2;
  Graph g = preset("llama2-70b-tiny", o);
  const hardware::Cluster c = cluster("dgx-a100", 2, 4);
  const Plan p = plan(g, c, "tp=2,pp=2,vp=2,sp=1,mb=1,recompute=full");
  const ExportResult r = export_plan(ExportTarget::torchtitan, g, c, p);
  const nlohmann::json job = toml(r.config);
  if (job.is_null()) GTEST_SKIP() << "no python3 with tomllib";
  const auto& par = job["parallelism"];
  EXPECT_EQ(par["tensor_parallel_degree"], 2);
  EXPECT_EQ(par["pipeline_parallel_degree"], 2);
  EXPECT_EQ(par["pipeline_parallel_schedule"], "Interleaved1F1B");
  // stages = (layers + first/last less) / layers per stage = pp x vp
  EXPECT_EQ((8 + par["pipeline_parallel_first_stage_less_layers"].get<int>() + par["pipeline_parallel_last_stage_less_layers"].get<int>()) /
                par["pipeline_parallel_layers_per_stage"].get<int>(),
            4);
  const TitanBatch b = titan_batch(job);
  EXPECT_EQ(b.dp, 2);
  EXPECT_EQ(b.microbatch, 1);
  EXPECT_EQ(b.accumulation, p.micro_batches);
  EXPECT_EQ(b.microbatch * b.dp * b.accumulation, 16);
  EXPECT_EQ(job["activation_checkpoint"]["mode"], "full");
  EXPECT_EQ(job["training"]["seq_len"], 32);
  EXPECT_EQ(job["training"]["mixed_precision_param"], "bfloat16");
  EXPECT_EQ(job["compile"]["enable"], false);
  // The model's own flavor, by the module the job imports.
  EXPECT_EQ(job["model"]["flavor"], "symtensor");
  EXPECT_EQ(job["experimental"]["custom_import"], "symtensor_flavor");
  const nlohmann::json f = flavor_args(extra(r, "symtensor_flavor.py"));
  EXPECT_EQ(f["dim"], config_.hidden);
  EXPECT_EQ(f["n_layers"], 8);
  EXPECT_EQ(f["n_heads"], config_.heads);
  EXPECT_EQ(f["n_kv_heads"], 2);
  EXPECT_EQ(f["vocab_size"], config_.vocab);
  EXPECT_DOUBLE_EQ(f["rope_theta"].get<double>(), config_.rope_theta);
  // torchtitan's FFN width: int(2/3 of 4 dim) x multiplier, rounded up to multiple_of.
  long long hidden = 8 * config_.hidden / 3;
  if (!f["ffn_dim_multiplier"].is_null()) hidden = static_cast<long long>(f["ffn_dim_multiplier"].get<double>() * hidden);
  const long long multiple = f["multiple_of"];
  EXPECT_EQ((hidden + multiple - 1) / multiple * multiple, config_.intermediate);
}

// HSDP: FSDP inside each node, replicas across the two nodes; both degrees written, their
// product the batch degree torchtitan divides the global batch by.
TEST_F(ExportReadback, TorchtitanHsdpWritesBothDegrees) {
  Graph g = preset("llama2-70b-tiny");
  // Priced with torchtitan's stack: its selective recomputation is the op-level policy written.
  const hardware::Cluster c = hardware::with_software(cluster("dgx-h100", 2, 4), {"torchtitan"});
  const Plan p = plan(g, c, "tp=1,pp=1,mb=1,fsdp=3,replicate=2,recompute=selective");
  const ExportResult r = export_plan(ExportTarget::torchtitan, g, c, p);
  EXPECT_TRUE(r.exact()) << (r.not_expressible.empty() ? "" : r.not_expressible.front());
  const nlohmann::json job = toml(r.config);
  if (job.is_null()) GTEST_SKIP() << "no python3 with tomllib";
  const auto& par = job["parallelism"];
  EXPECT_EQ(par["data_parallel_replicate_degree"], 2);
  EXPECT_EQ(par["data_parallel_shard_degree"], 4);
  EXPECT_EQ(par["fsdp_reshard_after_forward"], "default");
  EXPECT_EQ(par["tensor_parallel_degree"], 1);
  const TitanBatch b = titan_batch(job);
  EXPECT_EQ(b.dp, 8);
  EXPECT_EQ(b.local, 1);
  EXPECT_EQ(b.accumulation, 2);  // 16 samples / (1 x 8)
  EXPECT_EQ(b.microbatch * b.dp * b.accumulation, 16);
  EXPECT_EQ(job["activation_checkpoint"]["mode"], "selective");
  // The same plan fully sharded writes one shard group of 8.
  const nlohmann::json fsdp = toml(export_plan(ExportTarget::torchtitan, g, c, plan(g, c, "tp=1,pp=1,mb=1,fsdp=3")).config);
  EXPECT_EQ(fsdp["parallelism"]["data_parallel_replicate_degree"], 1);
  EXPECT_EQ(fsdp["parallelism"]["data_parallel_shard_degree"], 8);
}

// Megatron's split with the embedding and the loss counted as layers is torchtitan's with
// one "less layer" on the first and last stage.
TEST_F(ExportReadback, TorchtitanEmbeddingAndLossAsLayers) {
  models::Overrides o;
  o.layers = 6;
  Graph g = preset("llama2-70b-tiny", o);
  const hardware::Cluster c = cluster("dgx-a100", 2, 4);
  const Plan p = plan(g, c, "tp=2,pp=2,vp=2,sp=1,mb=1");
  ASSERT_EQ(recover_recipe(g, c, p).layers_per_stage, (std::vector<int>{3, 3}));
  const ExportResult r = export_plan(ExportTarget::torchtitan, g, c, p);
  EXPECT_TRUE(r.exact()) << r.not_expressible.front();
  const nlohmann::json job = toml(r.config);
  if (job.is_null()) GTEST_SKIP() << "no python3 with tomllib";
  const auto& par = job["parallelism"];
  EXPECT_EQ(par["pipeline_parallel_first_stage_less_layers"], 1);
  EXPECT_EQ(par["pipeline_parallel_last_stage_less_layers"], 1);
  EXPECT_EQ((6 + 2) / par["pipeline_parallel_layers_per_stage"].get<int>(), 4);  // pp x vp stages
}

TEST_F(ExportReadback, TorchtitanExpertsAndFloat8) {
  Graph g = preset("mixtral-8x7b-tiny");
  const hardware::Cluster c = cluster("dgx-h100", 2, 4);
  const Plan p = plan(g, c, "tp=2,sp=1,ep=4,etp=1,mb=1", hardware::Precision::fp8);
  const ExportResult r = export_plan(ExportTarget::torchtitan, g, c, p);
  const nlohmann::json job = toml(r.config);
  if (job.is_null()) GTEST_SKIP() << "no python3 with tomllib";
  EXPECT_EQ(job["parallelism"]["expert_parallel_degree"], 4);
  EXPECT_EQ(job["model"]["converters"], nlohmann::json::array({"quantize.linear.float8"}));
  EXPECT_EQ(job["quantize"]["linear"]["float8"]["recipe_name"], "tensorwise");
  // torchtitan's llama3 has no experts: said, not silently dropped.
  EXPECT_NE(extra(r, "symtensor_flavor.py").find("PLACEHOLDER llama3 cannot build 4 experts"), std::string::npos);
  const TitanBatch b = titan_batch(job);
  EXPECT_EQ(b.microbatch * b.dp * b.accumulation, 16);
}

}  // namespace
}  // namespace symtensor::compiler
