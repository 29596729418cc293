// Mixture of experts with expert parallelism, against shared/reference/CALIBRATION.md
// ("MoE with expert parallelism"): Mixtral 8x7B on 8 nodes x 8 H100 (dgx-h100), global batch
// 256, seq 4096, bf16.
//
// Knobs we chose (the source states TP1 EP8 PP4 VP8, micro-batch 1, batch 256, dropless):
// - capacity factor 1.0 (the zoo's default): every expert takes exactly k*s/E tokens; the
//   published run is dropless, whose busiest expert takes more, so we expect to be fast;
// - fused attention (Megatron-Core runs flash attention), no recompute, the distributed
//   optimizer (Megatron-Core's MoE examples use it), overlapped gradient reduction;
// - TFLOP/s counted with Megatron-LM's own formula (training.py num_floating_point_operations:
//   12·B·s·l·h²·[(1 + g/a + s/h)·q/h + (I/h)·k·3/2 + V/(2lh)], attention not halved), as
//   the published figure is.
#include <cmath>
#include <cstdio>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "onnx_models/model_zoo.h"  // protobuf before GiNaC (CLN's Mutable macro)
#include "compiler/cost/plan_analysis.h"
#include "compiler/lowering/simulate_plan.h"
#include "compiler/onnx_import/import.h"
#include "compiler/search/make_plan.h"
#include "compiler/search/megatron_search.h"
#include "compiler/strategies/strategy.h"
#include "hardware/cluster.h"
#include "onnx_models/presets.h"

namespace symtensor::compiler {
namespace {

constexpr double kBatch = 256, kSeq = 4096;

struct MixtralOnH100 {
  models::ModelConfig config = models::preset_config("mixtral-8x7b");
  Graph graph;
  hardware::Cluster cluster = hardware::scale_cluster(hardware::load_cluster("dgx-h100"), 8, 8);
  MixtralOnH100() {
    ImportOptions io;
    io.bindings = {{"batch", kBatch}, {"seq", kSeq}};
    io.warn_opaque = false;
    graph = import_onnx_model(models::build_model(config), "mixtral-8x7b", io);
  }
  PlanSimulation simulate(const std::string& knobs) {
    StrategyOptions so;
    so.megatron = knobs;
    const Plan plan = make_plan("megatron", graph, cluster, so);
    sim::SimOptions options;
    options.record_trace = false;
    return simulate_plan(graph, plan, cluster, {}, options);
  }
};

double megatron_flops_per_step(const models::ModelConfig& c) {
  const double l = c.layers, h = c.hidden, a = c.heads, g = c.kv_heads, I = c.intermediate, V = c.vocab;
  const double k = c.top_k, s = kSeq;
  return 12 * kBatch * s * l * h * h * ((1 + g / a + s / h) + (I / h) * k * 1.5 + V / (2 * l * h));
}

TEST(ValidationMoe, MegatronCoreMixtralThroughput) {
  MixtralOnH100 m;
  const PlanSimulation s = m.simulate("tp=1,pp=4,vp=8,mb=1,ep=8,distopt=1");
  const double published = 438;  // TFLOP/s per GPU, Megatron-Core v0.8
  const double tflops = megatron_flops_per_step(m.config) / (64 * s.report.step_time_s) / 1e12;
  const double error = tflops / published - 1;
  std::printf("Mixtral 8x7B, 64 H100, TP1 EP8 PP4 VP8 mb1, batch 256: published %.0f TFLOP/s, simulated %.0f "
              "(%+.1f%%), step %.2f s: compute %.2f s, exposed comm %.3f s, bubble %.3f s, all-to-all %.3f s\n",
              published, tflops, 100 * error, s.report.step_time_s, s.report.compute_s, s.report.exposed_comm_s,
              s.report.bubble_s, s.report.collectives_s.count("all_to_all") ? s.report.collectives_s.at("all_to_all") : 0.0);
  EXPECT_TRUE(s.report.fits);
  ASSERT_TRUE(s.report.collectives_s.count("all_to_all"));
  EXPECT_GT(s.report.collectives_s.at("all_to_all"), 0);
  // Simulated +0.2% (439 against 438) since weight gradients of weight-free models are
  // priced and the efficiency curves refitted. Capacity factor 1 against the published
  // dropless routing's imbalance is the knob most likely to move it.
  EXPECT_LT(std::abs(error), 0.25);
}

// At Megatron-Core's published layout (pipelined, distributed optimizer) expert parallelism
// is what makes Mixtral fit without recomputation: without it every rank holds all eight
// experts' states, and only full recomputation squeezes them in, at a slower step. The
// simulator, the referee, shows the all-to-all of the EP plan.
TEST(ValidationMoe, ExpertParallelismBeatsReplicatedExpertsAtThePublishedLayout) {
  MixtralOnH100 m;
  const std::string layout = "tp=1,pp=4,vp=8,mb=1,distopt=1";
  const PlanSimulation with_ep = m.simulate(layout + ",ep=8");
  const PlanSimulation without = m.simulate(layout);
  const PlanSimulation recomputed = m.simulate(layout + ",recompute=full");
  std::printf("simulated: ep=8 %.3f s (all-to-all %.3f s), ep=1 %s, ep=1 with full recomputation %.3f s\n",
              with_ep.report.step_time_s, with_ep.report.collectives_s.count("all_to_all") ? with_ep.report.collectives_s.at("all_to_all") : 0.0,
              without.report.fits ? "fits" : "does not fit", recomputed.report.step_time_s);
  EXPECT_TRUE(with_ep.report.fits);
  EXPECT_FALSE(without.report.fits);
  // With full recomputation just so: a stage holds a quarter of the 46.7B parameters at
  // Megatron's 6 + 12/16 bytes each (fp32 main gradients), 78.8 GB, beside the 79.3 GB an H100
  // leaves ((85.5 GB exposed - 2 GB reserved) x 0.95 headroom), and recomputes every layer.
  EXPECT_TRUE(recomputed.report.fits);
  EXPECT_GT(recomputed.report.step_time_s, with_ep.report.step_time_s);
  ASSERT_TRUE(with_ep.report.collectives_s.count("all_to_all"));
  EXPECT_GT(with_ep.report.collectives_s.at("all_to_all"), 0);
  EXPECT_EQ(without.report.collectives_s.count("all_to_all"), 0u);
}

// Megatron-best searches every ep dividing the experts (MoE parallel folding) and, for each,
// the rest of its space; with Megatron-FSDP the experts' states are sharded anyway, so the
// degrees come within a percent of each other, and the estimate prices the winner as the
// simulator runs it.
TEST(ValidationMoe, MegatronBestPricesEveryExpertParallelDegree) {
  MixtralOnH100 m;
  StrategyOptions so;
  const MegatronSearchResult best = megatron_search(m.graph, m.cluster, so);
  std::printf("Megatron-best: %s, estimated %.3f s; %d configurations\n", to_string(best.knobs).c_str(),
              best.estimate.step_time_s, best.configurations);
  for (const auto& [ep, b] : best.best_by_ep) std::printf("  ep=%d: %s, %.3f s\n", ep, to_string(b.knobs).c_str(), b.step_time_s);
  for (int ep : {1, 2, 4, 8}) EXPECT_TRUE(best.best_by_ep.count(ep)) << "ep=" << ep;
  for (const auto& [ep, b] : best.best_by_ep) EXPECT_GE(b.step_time_s, best.estimate.step_time_s) << "ep=" << ep;
  const PlanSimulation s = m.simulate(to_string(best.knobs));
  EXPECT_NEAR(s.report.step_time_s / best.estimate.step_time_s, 1.0, 0.02);
}

}  // namespace
}  // namespace symtensor::compiler
