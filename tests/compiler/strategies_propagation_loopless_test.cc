// Propagation decides a Constant (a node without loops that no node feeds) before its sweeps
// and never visits it; a node without loops that reads data (an opaque operator) is visited as
// any other, once: deciding it up front too would show its replicated demand to its producer
// on that producer's first visit, where the sweeps did not, and move other cuts.
#include <gtest/gtest.h>

#include "compiler/onnx_import/import.h"
#include "compiler/sharding/cut_sharding.h"
#include "compiler/strategies/data_parallel.h"
#include "compiler/strategies/propagation.h"
#include "onnx_test_util.h"
#include "strategies_test_util.h"

namespace symtensor::compiler {
namespace {

using namespace symtensor::testing;

NodeId node_named(const Graph& g, const std::string& name) {
  for (NodeId n = 0; n < static_cast<NodeId>(g.nodes().size()); ++n)
    if (g.node(n).name == name) return n;
  ADD_FAILURE() << "no node " << name;
  return 0;
}

// x[batch = 8, 16] (bf16) -> A = Relu (cut on the batch, fixed) -> P = Cast to fp32 -> {O (opaque), Q = Relu}
TEST(PropagationLoopless, AnOpaqueConsumerIsSeenWhenTheSweepsReachIt) {
  auto m = make_model();
  add_input(m, "x", {std::string("batch"), std::int64_t{16}}, onnx::TensorProto::BFLOAT16);
  add_node(m, "Relu", {"x"}, {"a"}, "A");
  add_int_attr(add_node(m, "Cast", {"a"}, {"p"}, "P"), "to", onnx::TensorProto::FLOAT);
  add_node(m, "Mystery", {"p"}, {"o"}, "O")->set_domain("test.custom");
  auto* custom = m.add_opset_import();
  custom->set_domain("test.custom");
  custom->set_version(1);
  add_node(m, "Relu", {"p"}, {"q"}, "Q");
  add_output(m, "o", {std::string("batch"), std::int64_t{16}});
  add_output(m, "q", {std::string("batch"), std::int64_t{16}});
  ImportOptions io;
  io.warn_opaque = false;
  io.bindings = {{"batch", 8}};
  Graph g = import_onnx_model(m, "loopless", io);
  const hardware::Cluster cluster = testing::dgx(1, 2);
  Plan plan = make_data_parallel_plan(g, cluster, StrategyOptions{}, 0);
  const hardware::DeviceMesh mesh = plan_mesh(plan, cluster);
  const NodeId a = node_named(g, "A"), p = node_named(g, "P"), o = node_named(g, "O"), q = node_named(g, "Q");
  const std::vector<IterationSpace> spaces = node_iteration_spaces(g);
  ASSERT_TRUE(spaces[o].loops.empty());  // opaque: read whole
  ASSERT_EQ(cut_ways(plan.node_cuts[a], mesh), 2);
  std::vector<bool> fixed(g.nodes().size(), false);
  fixed[a] = true;
  for (NodeId n = 0; n < static_cast<NodeId>(g.nodes().size()); ++n)
    if (!fixed[n]) plan.node_cuts[n] = NodeCut{};
  propagate_cuts(g, mesh, plan, fixed, spaces);
  // The Cast first takes A's cut (nothing asks otherwise yet); going back, the opaque reader
  // makes it gather its bf16 input rather than its fp32 output, and the Relu keeps the cut it
  // took from the Cast's first choice (a slice is free).
  EXPECT_EQ(cut_ways(plan.node_cuts[p], mesh), 1);
  EXPECT_EQ(cut_ways(plan.node_cuts[q], mesh), 2);
  EXPECT_TRUE(plan.node_cuts[o].loop_axes.empty());
}

}  // namespace
}  // namespace symtensor::compiler
