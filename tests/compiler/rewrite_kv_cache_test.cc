// serve --onnx's KV cache (compiler/rewrite/kv_cache.h): a decode step's present outputs paired
// with their past inputs, and under tensor parallelism each rank holding its share of the KV
// heads from input to output, the cache length whole, nothing gathered.
#include <string>

#include <gtest/gtest.h>

#include "compiler/onnx_import/import.h"
#include "compiler/rewrite/kv_cache.h"
#include "compiler/strategies/megatron.h"
#include "hardware/cluster.h"
#include "onnx_models/model_zoo.h"
#include "onnx_models/presets.h"

namespace symtensor::compiler {
namespace {

onnx::ModelProto kv_test_decode_step(bool decode_step) {
  models::ModelConfig c = models::preset_config("llama3-8b-tiny");  // 4 heads, 2 KV heads of 16, 2 layers
  c.decode_step = decode_step;
  return models::build_model(c);
}

const ShardedValue& kv_test_value(const ShardedProgram& p, const std::string& name) {
  for (const auto& v : p.values)
    if (v.name == name) return v;
  throw std::runtime_error("no value " + name);
}

TEST(KvCache, DecodeStepPairsEachLayersPastWithItsPresent) {
  const auto pairs = find_kv_cache(kv_test_decode_step(true));
  ASSERT_EQ(pairs.size(), 4u);  // 2 layers x key, value
  for (const auto& p : pairs) {
    EXPECT_EQ(p.present, "present" + p.past.substr(4)) << p.past;  // past_key_0 -> present_key_0
    EXPECT_EQ(p.axis, 2) << p.past;                                 // [batch, kv, seq, d]
  }
  EXPECT_TRUE(find_kv_cache(kv_test_decode_step(false)).empty());  // the whole model has no cache
}

TEST(KvCache, TensorParallelRanksKeepTheirKvHeadsOfTheCache) {
  const onnx::ModelProto model = kv_test_decode_step(true);
  ImportOptions o;
  o.bindings = {{"batch", 4}, {"past_seq", 8}};
  o.warn_opaque = false;
  Graph graph = import_onnx_model(model, "llama3-8b-tiny-step", o);
  const hardware::Cluster cluster = hardware::scale_cluster(hardware::load_cluster("dgx-a100"), 1, 2);
  StrategyOptions so;
  so.mode = ExecutionMode::infer;
  Plan plan = make_megatron_plan(graph, cluster, parse_megatron_knobs("tp=2,pp=1,mb=1"), so);
  const auto pairs = find_kv_cache(model);
  const std::vector<long> pieces = cut_kv_cache_updates(graph, plan, cluster, pairs);
  ASSERT_EQ(pieces.size(), 4u);
  for (long n : pieces) EXPECT_EQ(n, 2);  // 2 KV heads over tp=2: one each

  const ShardedProgram p = build_sharded_program(model, graph, plan, cluster, Mutation::none, kept_outputs_of(pairs));
  const ShardedValue& past = kv_test_value(p, "past_key_1");
  EXPECT_EQ(past.global_shape, (std::vector<std::int64_t>{4, 2, 8, 16}));
  EXPECT_EQ(past.local_shape, (std::vector<std::int64_t>{4, 1, 8, 16}));  // 2 heads / tp 2; the 8 cached tokens whole
  for (const auto& [name, v] : p.outputs) {
    const ShardedValue& out = p.values[v];
    if (name == "logits") {
      EXPECT_TRUE(out.sharding.fully_replicated());
    } else {
      EXPECT_EQ(out.name, name);  // the Concat's own value: no collective after it
      EXPECT_EQ(out.local_shape, (std::vector<std::int64_t>{4, 1, 9, 16})) << name;
    }
  }
  for (const auto& s : p.steps) {
    if (s.kind != ProgramStep::Kind::collective) continue;
    EXPECT_EQ(p.values[s.inputs[0]].name.rfind("present", 0), std::string::npos) << "the cache is resharded";
  }
}

}  // namespace
}  // namespace symtensor::compiler
