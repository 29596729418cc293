// The Megatron generator's plan, priced by the cost model, reproduces the published
// communication volumes exactly (Narayanan et al. SC'21; Korthikanti et al. 2022):
// - tensor parallelism: 4 all-reduces of b·s·h elements per layer per micro-batch in
//   training (2 forward after proj and FC2, 2 backward before QKV and FC1), 2 in inference;
// - with sequence parallelism each all-reduce becomes a reduce-scatter + all-gather of
//   the same b·s·h buffer (4 of each in training);
// - data parallelism: gradient all-reduce volume = the parameters in the stack's reduce dtype (fp32).
#include <map>

#include <gtest/gtest.h>

#include "compiler/cost/plan_analysis.h"
#include "compiler/strategies/data_parallel.h"
#include "compiler/strategies/megatron.h"
#include "tests/compiler/gpt_layer_util.h"
#include "tests/compiler/strategies_test_util.h"

namespace symtensor::compiler {
namespace {

constexpr std::int64_t kHidden = 256, kHeads = 8, kBatch = 4, kSeq = 32;

Graph layer_graph() {
  ImportOptions o;
  o.bindings = {{"batch", static_cast<double>(kBatch)}, {"seq", static_cast<double>(kSeq)}};
  o.warn_opaque = false;
  return import_onnx_model(symtensor::testing::gpt_training_layer(kHidden, kHeads), "gpt-layer", o);
}

// (collective, bytes) -> count over every operator's forward and backward collectives.
std::map<std::pair<hardware::Collective, double>, int> layer_collectives(const PlanAnalysis& a) {
  std::map<std::pair<hardware::Collective, double>, int> count;
  for (const OpWork& w : a.ops) {
    for (const auto* comms : {&w.fwd_comm, &w.bwd_comm})
      for (const CommOp& c : *comms) ++count[{c.kind, c.bytes}];
  }
  return count;
}

struct CommCase {
  int tp;
  bool sp;
  ExecutionMode mode;
};

class MegatronLayerComm : public ::testing::TestWithParam<CommCase> {};

TEST_P(MegatronLayerComm, MatchesPublishedVolumes) {
  const CommCase c = GetParam();
  Graph g = layer_graph();
  const hardware::Cluster cluster = testing::dgx(1, c.tp);
  StrategyOptions o;
  o.mode = c.mode;
  o.precision = hardware::Precision::fp16;
  MegatronKnobs k;
  k.tp = c.tp, k.sp = c.sp, k.mb = kBatch;  // one micro-batch of the whole batch
  const Plan plan = make_megatron_plan(g, cluster, k, o);
  testing::expect_valid_plan(g, cluster, plan);
  const PlanAnalysis a = analyze_plan(g, cluster, plan);
  const double bsh_bytes = 2.0 * kBatch * kSeq * kHidden;  // fp16 b·s·h
  const int per_direction = c.mode == ExecutionMode::train ? 2 : 1;
  std::map<std::pair<hardware::Collective, double>, int> expected;
  if (c.sp) {
    expected[{hardware::Collective::reduce_scatter, bsh_bytes}] = 2 * per_direction;
    expected[{hardware::Collective::all_gather, bsh_bytes}] = 2 * per_direction;
  } else {
    expected[{hardware::Collective::all_reduce, bsh_bytes}] = 2 * per_direction;
  }
  EXPECT_EQ(layer_collectives(a), expected);
}

INSTANTIATE_TEST_SUITE_P(TensorParallel, MegatronLayerComm,
                         ::testing::Values(CommCase{2, false, ExecutionMode::train}, CommCase{4, false, ExecutionMode::train},
                                           CommCase{8, false, ExecutionMode::train}, CommCase{4, false, ExecutionMode::infer},
                                           CommCase{4, true, ExecutionMode::train}, CommCase{8, true, ExecutionMode::train},
                                           CommCase{4, true, ExecutionMode::infer}));

// Data parallel over 8 GPUs: every parameter's gradient is all-reduced once, in 16 bits,
// so the volume is 2 bytes x the parameter count (gpt2-small-tiny: counted from the graph).
TEST(DataParallelComm, GradientVolumeEqualsParameterBytes) {
  Graph g = testing::zoo_graph("gpt2-small-tiny", 8, 16);
  const hardware::Cluster cluster = testing::dgx(1, 8);
  const Plan plan = make_data_parallel_plan(g, cluster, StrategyOptions{}, 0);
  const PlanAnalysis a = analyze_plan(g, cluster, plan);
  double parameters = 0;
  for (const Tensor& t : g.tensors())
    if (t.is_parameter) parameters += *g.symbols.evaluate(t.num_elements());
  double all_reduced = 0;
  for (const ParamWork& p : a.params)
    for (const CommOp& c : p.grad_sync) {
      EXPECT_EQ(c.kind, hardware::Collective::all_reduce);
      all_reduced += c.bytes;
    }
  EXPECT_GT(parameters, 0);
  // Megatron-LM (the default stack) reduces bf16 training's gradients in fp32.
  EXPECT_DOUBLE_EQ(all_reduced, 4.0 * parameters);
  // and the forward pass of data parallelism moves nothing
  for (const OpWork& w : a.ops) EXPECT_TRUE(w.fwd_comm.empty()) << g.node(w.node).name;
}

}  // namespace
}  // namespace symtensor::compiler
