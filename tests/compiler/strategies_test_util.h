#pragma once
// Shared helpers of the strategy tests: zoo models imported with bindings, clusters, and a
// structural validity check of a Plan.
#include <gtest/gtest.h>

#include "compiler/onnx_import/import.h"
#include "compiler/ops/op_semantics.h"
#include "compiler/plan/plan.h"
#include "compiler/strategies/propagation.h"
#include "hardware/cluster.h"
#include "onnx_models/model_zoo.h"
#include "onnx_models/presets.h"

namespace symtensor::compiler::testing {

inline Graph zoo_graph(const std::string& preset, double batch, double seq) {
  ImportOptions o;
  o.bindings = {{"batch", batch}, {"seq", seq}};
  o.warn_opaque = false;
  return import_onnx_model(models::build_model(models::preset_config(preset)), preset, o);
}

inline hardware::Cluster dgx(int nodes, int gpus = 8) {
  return hardware::scale_cluster(hardware::load_cluster("dgx-a100"), nodes, gpus);
}

// Every node has a stage in range and a cut over existing, non-pipeline axes, each used
// once, on loops the propagation rules allow; stages never decrease along an edge.
inline void expect_valid_plan(Graph& g, const hardware::Cluster& cluster, const Plan& plan) {
  const hardware::DeviceMesh mesh = plan_mesh(plan, cluster);
  ASSERT_EQ(plan.node_cuts.size(), g.nodes().size());
  ASSERT_EQ(plan.stage_of_node.size(), g.nodes().size());
  const std::vector<IterationSpace> spaces = node_iteration_spaces(g);
  for (NodeId n = 0; n < static_cast<NodeId>(g.nodes().size()); ++n) {
    const auto& cut = plan.node_cuts[n].loop_axes;
    ASSERT_LE(cut.size(), spaces[n].loops.size()) << g.node(n).name;
    std::vector<bool> used(mesh.axes().size(), false);
    for (std::size_t l = 0; l < cut.size(); ++l) {
      for (int a : cut[l]) {
        ASSERT_GE(a, 0) << g.node(n).name;
        ASSERT_LT(a, static_cast<int>(mesh.axes().size())) << g.node(n).name;
        EXPECT_NE(a, plan.pipeline_axis) << g.node(n).name;
        EXPECT_FALSE(used[a]) << g.node(n).name;
        used[a] = true;
      }
      // A padded loop (Megatron's padded vocabulary) is cut over its padded extent.
      const auto padded = plan.node_cuts[n].padded_extents.find(static_cast<int>(l));
      const std::optional<double> extent = padded != plan.node_cuts[n].padded_extents.end()
                                               ? std::optional<double>(static_cast<double>(padded->second))
                                               : numeric_extent(g, spaces[n].loops[l].extent);
      EXPECT_TRUE(cut_allowed(g.node(n), spaces[n], static_cast<int>(l), extent, cut[l], mesh))
          << g.node(n).name << " loop " << spaces[n].loops[l].name;
    }
    EXPECT_GE(plan.stage_of_node[n], 0);
    EXPECT_LT(plan.stage_of_node[n], plan.pipeline_stages());
    for (TensorId t : g.node(n).inputs) {
      if (t != kNone && g.tensor(t).producer != kNone) {
        EXPECT_LE(plan.stage_of_node[g.tensor(t).producer], plan.stage_of_node[n]);
      }
    }
  }
}

}  // namespace symtensor::compiler::testing
