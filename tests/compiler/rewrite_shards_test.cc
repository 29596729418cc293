// What the sharded ONNX files hold for each rank: Megatron's head-interleaved slices of a
// fused QKV weight (checked column by column against the original), and initializer
// elements that add up, per weight and stage, to the original times its replication.
#include <cstring>
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "compiler/onnx_import/import.h"
#include "compiler/rewrite/stage_writer.h"
#include "compiler/rewrite/tensor_data.h"
#include "compiler/strategies/megatron.h"
#include "hardware/cluster.h"
#include "onnx_models/model_zoo.h"
#include "onnx_models/presets.h"

namespace symtensor::compiler {
namespace {

struct Compiled {
  onnx::ModelProto model;
  Graph graph;
  Plan plan;
  ShardedProgram program;
  std::vector<StageFile> files;
};

Compiled compile(const std::string& preset, int gpus, const std::string& knobs) {
  Compiled c;
  c.model = models::build_model(models::preset_config(preset));
  ImportOptions o;
  o.bindings = {{"batch", 8}, {"seq", 8}};
  o.warn_opaque = false;
  c.graph = import_onnx_model(c.model, preset, o);
  const hardware::Cluster cluster = hardware::scale_cluster(hardware::load_cluster("dgx-a100"), 1, gpus);
  c.plan = make_megatron_plan(c.graph, cluster, parse_megatron_knobs(knobs), StrategyOptions{});
  c.program = build_sharded_program(c.model, c.graph, c.plan, cluster);
  c.files = build_stage_files(c.model, c.program);
  return c;
}

const onnx::TensorProto* find_initializer(const onnx::GraphProto& g, const std::string& name) {
  for (const auto& init : g.initializer())
    if (init.name() == name) return &init;
  return nullptr;
}

const StageFile& file_of_rank(const Compiled& c, int rank) {
  for (const auto& f : c.files)
    for (int r : f.ranks)
      if (r == rank) return f;
  throw std::runtime_error("no file for rank " + std::to_string(rank));
}

float at(const TensorBytes& t, std::int64_t i) {
  float x;
  std::memcpy(&x, t.bytes.data() + i * 4, 4);
  return x;
}

std::string metadata(const onnx::ModelProto& m, const std::string& key) {
  for (const auto& p : m.metadata_props())
    if (p.key() == key) return p.value();
  return "";
}

// gpt2-small-tiny: hidden 64, c_attn weight [64, 192] = [q | k | v]. Under tp=2 rank r holds
// columns [32r, 32r+32) of each of the three 64-column blocks: q_r, k_r, v_r.
TEST(RewriteShards, FusedQkvWeightIsSlicedHeadInterleaved) {
  const Compiled c = compile("gpt2-small-tiny", 2, "tp=2");
  const std::string w = "transformer.h.0.attn.c_attn.weight", b = "transformer.h.0.attn.c_attn.bias";
  const TensorBytes full_w = read_tensor_bytes(*find_initializer(c.model.graph(), w));
  const TensorBytes full_b = read_tensor_bytes(*find_initializer(c.model.graph(), b));
  ASSERT_EQ(full_w.dims, (std::vector<std::int64_t>{64, 192}));
  for (int rank = 0; rank < 2; ++rank) {
    const StageFile& f = file_of_rank(c, rank);
    const onnx::TensorProto* wp = find_initializer(f.model.graph(), w);
    const onnx::TensorProto* bp = find_initializer(f.model.graph(), b);
    ASSERT_NE(wp, nullptr);
    ASSERT_NE(bp, nullptr);
    const TensorBytes local_w = read_tensor_bytes(*wp), local_b = read_tensor_bytes(*bp);
    ASSERT_EQ(local_w.dims, (std::vector<std::int64_t>{64, 96}));
    ASSERT_EQ(local_b.dims, (std::vector<std::int64_t>{96}));
    for (std::int64_t j = 0; j < 96; ++j) {
      const std::int64_t column = (j / 32) * 64 + 32 * rank + j % 32;
      EXPECT_EQ(at(local_b, j), at(full_b, column)) << "rank " << rank << " bias " << j;
      for (std::int64_t i = 0; i < 64; ++i)
        ASSERT_EQ(at(local_w, i * 96 + j), at(full_w, i * 192 + column)) << "rank " << rank << " row " << i << " col " << j;
    }
    EXPECT_NE(metadata(f.model, "symtensor.sharding." + w).find("blocks=1:[64,64,64]"), std::string::npos)
        << metadata(f.model, "symtensor.sharding." + w);
  }
}

// Summed over the ranks of a stage, each weight's initializer elements equal the original's
// times the ranks of the stage that hold the same shard (the stage's ranks divided by the
// ways the weight is split); each rank's file holds exactly its shard's elements.
void expect_elements_add_up(const Compiled& c, int expected_split_weights) {
  std::map<std::string, std::int64_t> original;
  for (const auto& init : c.model.graph().initializer()) original[init.name()] = read_tensor_bytes(init).elements();
  std::map<std::pair<int, std::string>, std::int64_t> held;  // (stage, weight) -> elements over its ranks
  for (const auto& f : c.files)
    for (const auto& init : f.model.graph().initializer())
      if (original.count(init.name()))
        held[{f.stage, init.name()}] += read_tensor_bytes(init).elements() * static_cast<std::int64_t>(f.ranks.size());
  int split = 0;
  std::set<std::string> seen;
  for (const ShardedValue& v : c.program.values) {
    if (v.origin != ValueOrigin::initializer || !original.count(v.name)) continue;
    std::int64_t ways = 1;
    for (const auto& axes : v.sharding.dim_axes)
      for (int a : axes) ways *= c.program.mesh.axes()[a].size;
    split += ways > 1;
    seen.insert(v.name);
    for (int stage = 0; stage < c.program.stages; ++stage) {
      auto it = held.find({stage, v.name});
      if (it == held.end()) continue;
      const auto ranks = static_cast<std::int64_t>(c.program.ranks_of_stage(stage).size());
      EXPECT_EQ(it->second, original[v.name] * ranks / ways) << v.name << " in stage " << stage;
    }
  }
  EXPECT_EQ(split, expected_split_weights);
  for (const auto& [key, elements] : held) EXPECT_TRUE(seen.count(key.second)) << key.second;
}

// Per layer Megatron splits c_attn (weight and bias), the attention c_proj weight and the
// MLP's c_fc (weight and bias) and c_proj weight: 6 per layer, 2 layers, plus the embedding
// that GPT-2 ties to its output layer (vocab parallel) and the position table (its columns).
TEST(RewriteShards, InitializerElementsAddUpToReplicationGpt) {
  const Compiled c = compile("gpt2-small-tiny", 8, "tp=2,pp=2");
  EXPECT_EQ(c.program.stages, 2);
  expect_elements_add_up(c, 6 * 2 + 2);
}

// q, k, v (GQA: 2 KV heads, so tp=2), o, gate, up and down per layer, 2 layers, plus the
// untied output layer and the input embedding (its columns); RMSNorm weights stay whole.
TEST(RewriteShards, InitializerElementsAddUpToReplicationLlama) {
  const Compiled c = compile("llama2-70b-tiny", 4, "tp=2");
  expect_elements_add_up(c, 7 * 2 + 2);
}

}  // namespace
}  // namespace symtensor::compiler
