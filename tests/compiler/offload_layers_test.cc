// Activation offloading (Megatron's --cpu-offloading-num-layers, Plan::offload_layers): the
// first N layers' saved tensors live in host memory, one layer's worth stays in transit on the
// device, and each layer's copy runs under the next layer's compute; what the copy does not
// hide is exposed. Checked against the plan without offloading (its per-layer saved bytes and
// compute, by hand), through the knob's refusals, plan.yaml and the exports.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "compiler/cost/plan_analysis.h"
#include "compiler/cost/step_estimate.h"
#include "compiler/export/export.h"
#include "compiler/plan/plan_yaml.h"
#include "compiler/search/export_searched.h"
#include "compiler/search/make_plan.h"
#include "compiler/strategies/strategy.h"
#include "tests/compiler/search_test_util.h"

namespace symtensor::compiler {
namespace {

struct OffloadLlama {
  Graph graph;
  hardware::Cluster cluster = symtensor::testing::cluster_of("dgx-a100", 1, 4);
  OffloadLlama() {
    models::Overrides o;
    o.layers = 4;
    graph = symtensor::testing::zoo_graph("llama2-7b-tiny", o, 16, 32);
  }
  Plan plan(const std::string& knobs) {
    StrategyOptions so;
    so.megatron = knobs;
    return make_plan("megatron", graph, cluster, so);
  }
};

double activations(const PlanAnalysis& a) {
  double sum = 0;
  for (const StageMemory& s : a.stage_memory) sum += s.activations_per_micro_batch;
  return sum;
}

TEST(OffloadLayers, SavedTensorsLeaveTheDeviceButOneLayerInTransit) {
  OffloadLlama m;
  const double none = activations(analyze_plan(m.graph, m.cluster, m.plan("tp=1,pp=1,mb=4")));
  std::vector<double> act;
  for (int n = 1; n <= 3; ++n) act.push_back(activations(analyze_plan(m.graph, m.cluster, m.plan("tp=1,pp=1,mb=4,offload=" + std::to_string(n)))));
  // Identical layers: one offloaded layer is the one in transit; each further one saves a layer.
  EXPECT_DOUBLE_EQ(act[0], none);
  const double layer = act[0] - act[1];
  EXPECT_GT(layer, 0);
  EXPECT_NEAR(act[1] - act[2], layer, 1e-6 * layer);
}

TEST(OffloadLayers, CopiesTheNextLayerDoesNotHideAreExposed) {
  OffloadLlama m;
  m.cluster.device.host_link_bandwidth = 1e9;  // a slow link: the copies show
  const Plan base = m.plan("tp=1,pp=1,mb=4");
  const PlanAnalysis a = analyze_plan(m.graph, m.cluster, base);
  const NumericGraph ng(m.graph);
  std::vector<double> saved(4, 0.0), fwd(4, 0.0), bwd(4, 0.0);
  for (const OpWork& w : a.ops) {
    const int l = ng.node_layers()[w.node];
    if (l < 0) continue;
    saved[l] += w.saved_bytes, fwd[l] += w.fwd_seconds, bwd[l] += w.bwd_seconds;
  }
  const int n = 2;
  double exposed = 0;  // per micro-batch: layer l's copy out under layer l+1's forward, back under its backward
  for (int l = 0; l < n; ++l) {
    const double copy = saved[l] / m.cluster.device.host_link_bandwidth;
    exposed += std::max(0.0, copy - fwd[l + 1]) + std::max(0.0, copy - bwd[l + 1]);
  }
  ASSERT_GT(exposed, 0);
  const Plan offloaded = m.plan("tp=1,pp=1,mb=4,offload=2");
  const double before = estimate_step(a, base, m.cluster).step_time_s;
  const double after = estimate_step(analyze_plan(m.graph, m.cluster, offloaded), offloaded, m.cluster).step_time_s;
  EXPECT_NEAR(after - before, exposed * base.micro_batches, 1e-9 * after);
  // The searches' path (sums kept with the operator work) agrees, after a plan without it.
  PlanAnalyzer analyzer(m.graph, m.cluster, ng);
  EXPECT_NEAR(estimate_step(analyzer.totals(base), base, m.cluster).step_time_s, before, 1e-12);
  EXPECT_NEAR(estimate_step(analyzer.totals(offloaded), offloaded, m.cluster).step_time_s, after, 1e-9 * after);
  EXPECT_NEAR(estimate_step(analyzer.totals(base), base, m.cluster).step_time_s, before, 1e-12);
  // A host link as fast as NVLink-C2C hides them.
  m.cluster.device.host_link_bandwidth = 1e15;
  const double hidden = estimate_step(analyze_plan(m.graph, m.cluster, offloaded), offloaded, m.cluster).step_time_s;
  EXPECT_NEAR(hidden, estimate_step(analyze_plan(m.graph, m.cluster, base), base, m.cluster).step_time_s, 1e-12);
}

TEST(OffloadLayers, RefusedWhereMegatronRefusesIt) {
  OffloadLlama m;
  auto refusal = [&](const std::string& knobs) {
    try {
      const Plan p = m.plan(knobs);
      analyze_plan(m.graph, m.cluster, p);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(refusal("tp=1,pp=2,mb=4,offload=1"), ::testing::HasSubstr("needs pp=1"));
  EXPECT_THAT(refusal("tp=1,pp=1,mb=4,offload=1,recompute=full"), ::testing::HasSubstr("offloads or recomputes"));
  EXPECT_THAT(refusal("tp=1,pp=1,mb=4,offload=4"), ::testing::HasSubstr("must be less than the model's 4 layers"));
  EXPECT_THAT(refusal("tp=1,offload=1"), ::testing::HasSubstr("--megatron offload=1: activation offloading is priced for one plan"));
  m.cluster.device.host_link_bandwidth = 0;
  EXPECT_THAT(refusal("tp=1,pp=1,mb=4,offload=1"), ::testing::HasSubstr("states no host link"));
}

// The searches' path refuses a count past the model's layers each time it is asked: the
// sums it failed to make are not kept half made (a second ask once read them as priced).
TEST(OffloadLayers, TheAnalyzersTotalsRefuseEveryTime) {
  OffloadLlama m;
  Plan p = m.plan("tp=1,pp=1,mb=4,offload=2");
  p.offload_layers = 4;
  const NumericGraph ng(m.graph);
  PlanAnalyzer analyzer(m.graph, m.cluster, ng);
  for (int ask = 0; ask < 2; ++ask)
    EXPECT_THROW(
        {
          try {
            analyzer.totals(p);
          } catch (const std::runtime_error& e) {
            EXPECT_THAT(e.what(), ::testing::HasSubstr("must be less than the model's 4 layers"));
            throw;
          }
        },
        std::runtime_error)
        << "ask " << ask;
}

TEST(OffloadLayers, PlanYamlAndExports) {
  OffloadLlama m;
  const Plan plan = m.plan("tp=2,pp=1,mb=4,offload=2");
  const std::string text = plan_to_yaml(plan, m.graph, m.cluster);
  EXPECT_THAT(text, ::testing::HasSubstr("offload_layers: 2"));
  EXPECT_EQ(plan_from_yaml(text, "p.yaml", m.graph, m.cluster).offload_layers, 2);
  const ExportResult r = export_plan(ExportTarget::megatron, m.graph, m.cluster, plan);
  EXPECT_THAT(r.config, ::testing::HasSubstr("--cpu-offloading\n--cpu-offloading-num-layers 2\n"));
  EXPECT_TRUE(r.not_expressible.empty()) << r.not_expressible.front();
  const ExportResult n = export_plan(ExportTarget::nemo, m.graph, m.cluster, plan);
  EXPECT_THAT(n.config, ::testing::HasSubstr("cpu_offloading_num_layers=2"));
  const ExportResult t = export_plan(ExportTarget::torchtitan, m.graph, m.cluster, plan);
  EXPECT_THAT(t.not_expressible, ::testing::Contains(::testing::HasSubstr("activation offloading of 2 layers")));
}

}  // namespace
}  // namespace symtensor::compiler
