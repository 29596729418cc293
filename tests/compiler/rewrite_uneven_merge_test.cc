// A Reshape that merges an odd dim into the one the plan cuts (#31): PyTorch's seq-major
// attention writes its output projection's input as (seq, batch, h) -> (seq*batch, h), and
// data parallelism cuts the merged dim, whose major factor is seq. With 17 tokens (a ViT's
// 16 patches and its class token) seq does not split 2 ways though seq*batch does: the
// rewrite reads the input whole along seq, reshapes, and keeps each rank's even share of
// the merged dim with a local slice, instead of refusing the uneven split of seq.
#include <algorithm>
#include <string>

#include <gtest/gtest.h>

#include "compiler/onnx_import/import.h"
#include "compiler/rewrite/sharded_program.h"
#include "compiler/strategies/data_parallel.h"
#include "hardware/cluster.h"
#include "tests/compiler/onnx_test_util.h"

namespace symtensor::compiler {
namespace {

// x [17, batch, 32] -> Reshape [-1, 32] -> MatMul W [32, 8] -> Reshape [17, -1, 8].
onnx::ModelProto seq_major_projection() {
  using namespace symtensor::testing;
  onnx::ModelProto m = make_model();
  add_input(m, "x", {std::int64_t{17}, std::string("batch"), std::int64_t{32}});
  add_initializer(m, int64_tensor("merged", {-1, 32}));
  add_initializer(m, int64_tensor("unmerged", {17, -1, 8}));
  add_initializer(m, float_tensor("w", {32, 8}));
  add_node(m, "Reshape", {"x", "merged"}, {"tokens"}, "merge");
  add_node(m, "MatMul", {"tokens", "w"}, {"projected"}, "proj");
  add_node(m, "Reshape", {"projected", "unmerged"}, {"y"}, "unmerge");
  add_output(m, "y", {std::int64_t{17}, std::string("batch"), std::int64_t{8}});
  return m;
}

const ShardedValue& value_named(const ShardedProgram& p, const std::string& name) {
  const auto it = std::find_if(p.values.begin(), p.values.end(), [&](const ShardedValue& v) { return v.name == name; });
  if (it == p.values.end()) throw std::runtime_error("no value '" + name + "'");
  return *it;
}

TEST(RewriteUnevenMerge, OddSeqMergedWithBatchIsReadWholeAndSlicedEvenly) {
  const onnx::ModelProto model = seq_major_projection();
  ImportOptions o;
  o.bindings = {{"batch", 12}};
  o.warn_opaque = false;
  Graph graph = import_onnx_model(model, "seq_major_projection", o);
  const hardware::Cluster cluster = hardware::scale_cluster(hardware::load_cluster("dgx-a100"), 1, 2);
  const Plan plan = make_data_parallel_plan(graph, cluster, StrategyOptions{}, 0);
  // The plan cuts the merged dim, 17 * 12 = 204 rows, 2 ways: seq (17) is its major factor.
  const ShardedProgram p = build_sharded_program(model, graph, plan, cluster);
  // Computed whole along seq: 17 * 12 rows on each rank...
  EXPECT_EQ(value_named(p, "tokens__unsliced").local_shape, (std::vector<std::int64_t>{204, 32}));
  // ...of which each keeps 204 / 2 = 102, the merged dim's even chunk, for the MatMul.
  const ShardedValue& tokens = value_named(p, "tokens");
  EXPECT_EQ(tokens.global_shape, (std::vector<std::int64_t>{204, 32}));
  EXPECT_EQ(tokens.local_shape, (std::vector<std::int64_t>{102, 32}));
  EXPECT_EQ(value_named(p, "projected").local_shape, (std::vector<std::int64_t>{102, 8}));
  // No value anywhere is split unevenly (17 never split 2 ways).
  for (const ShardedValue& v : p.values)
    for (std::size_t d = 0; d < v.local_shape.size(); ++d)
      EXPECT_EQ(v.global_shape[d] % v.local_shape[d], 0) << v.name << " dim " << d;
}

}  // namespace
}  // namespace symtensor::compiler
