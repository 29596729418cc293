// A compare row's memory figures on a mixed fleet: the peak shown is one stage's, beside
// that stage's own GPUs' memory (the stage closest to its capacity), and the step formula's
// largest batch holds each stage against its own GPUs; a crossing of two formulas below one
// sample is no break-even.
#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "compiler/report/compare.h"
#include "compiler/report/report_files.h"
#include "hardware/stack.h"
#include "onnx_models/model_zoo.h"
#include "onnx_models/presets.h"
#include "tests/temp_path.h"

namespace symtensor::compiler {
namespace {

constexpr double kGB = 1e9;

TEST(CompareFleetMemory, ARowsPeakIsTheStageClosestToItsOwnCapacity) {
  StrategyResult s;
  s.ok = true;
  s.estimate.stage_peak_memory = {60 * kGB, 20 * kGB};
  s.memory_capacity_bytes = 75 * kGB;
  // One GPU type: the fullest stage (margins -15 and -55 GB).
  EXPECT_EQ(s.tightest_stage(), 0u);
  EXPECT_EQ(s.peak_memory_bytes(), 60 * kGB);
  // Stage 1 on 22 GB GPUs: 2 GB left there, 15 GB on stage 0's.
  s.estimate.stage_memory_capacity = {75 * kGB, 22 * kGB};
  EXPECT_EQ(s.tightest_stage(), 1u);
  EXPECT_EQ(s.peak_memory_bytes(), 20 * kGB);
  CompareResults r;
  r.device_memory_bytes = 75 * kGB;
  EXPECT_EQ(r.row_memory_bytes(s), 22 * kGB);
}

// What compare's reports and `fit` print of the GPUs: each type of a fleet with its count and
// memory (a fleet printed "24 devices, 79.63 GiB each", its uniform view's).
TEST(CompareFleetMemory, DevicesAreDescribedByType) {
  const hardware::Cluster fleet = hardware::load_cluster("dgx-h100x1+pcie-l4x2");
  EXPECT_EQ(describe_devices(device_kinds(fleet)), "24 devices: 8 H100-SXM5-80GB of 79.63 GiB, 16 L4-24GB of 22.49 GiB");
  EXPECT_EQ(describe_devices(device_kinds(hardware::load_cluster("dgx-h100"))), "32 devices, 79.63 GiB each");  // 4 nodes of 8
}

TEST(CompareFleetMemory, EveryRowsPeakIsHeldAgainstItsOwnStagesGpus) {
  // The quality suite's three-type fleet: LLaMA-2 7B's layers on H100s, A100s and L4s (24 GB).
  models::ModelConfig config = models::preset_config("llama2-7b");
  config.weights = models::Weights::none;
  CompareOptions o;
  o.model = symtensor::testing::temp_path("fleet_memory_llama.onnx");
  models::save_model(models::build_model(config), o.model);
  o.bind = "batch=384,seq=4096";
  o.strategies = {"symtensor", "megatron", "dp"};
  const hardware::Cluster fleet =
      hardware::with_software(hardware::load_cluster("dgx-h100x2+dgx-a100x2+pcie-l4x2"), hardware::Software{});
  const CompareResults r = run_compare(o, fleet);
  ASSERT_EQ(r.strategies.size(), 3u);
  for (const StrategyResult& s : r.strategies) {
    ASSERT_TRUE(s.ok) << s.strategy << ": " << s.error;
    const std::vector<double> peaks = s.stage_peak_memory();
    ASSERT_FALSE(peaks.empty()) << s.label;
    ASSERT_TRUE(s.simulated) << s.label << ": " << s.simulation_error;  // as every fleet row
    // Every stage against the usable memory of one of the fleet's GPU types.
    for (std::size_t k = 0; k < peaks.size(); ++k) {
      bool a_group = false;
      for (const auto& group : fleet.groups) a_group |= s.stage_capacity_bytes(k) == group.device.usable_memory();
      EXPECT_TRUE(a_group) << s.label << " stage " << k << ": " << s.stage_capacity_bytes(k);
    }
    // A row that fits shows a peak within the capacity beside it.
    if (s.fits()) {
      EXPECT_LE(s.peak_memory_bytes(), r.row_memory_bytes(s)) << s.label;
    }
    // ... and its formula runs the batch it was planned for (each stage against its own GPUs:
    // the H100 stage's peak is above what an L4 holds).
    ASSERT_TRUE(s.formula) << s.label << ": " << s.simulation_error;
    if (s.fits()) {
      EXPECT_GE(s.formula->max_batch_that_fits, 384) << s.label;
    }
  }
  // The fleet plan's pipeline runs on every group (its stages' groups are the fleet's own): each
  // stage held against its own group's usable memory.
  const StrategyResult& fleet_plan = r.strategies[0];
  ASSERT_TRUE(fleet_plan.fits()) << fleet_plan.label;
  std::set<int> groups;
  for (std::size_t k = 0; k < fleet_plan.simulation.stages.size(); ++k) {
    const int g = fleet_plan.simulation.stages[k].group;
    ASSERT_GE(g, 0) << fleet_plan.simulation.stages[k].name;
    groups.insert(g);
    EXPECT_EQ(fleet_plan.stage_capacity_bytes(k), fleet.groups.at(g).device.usable_memory()) << fleet_plan.simulation.stages[k].name;
  }
  EXPECT_EQ(groups.size(), fleet.groups.size()) << fleet_plan.label;
  const std::vector<double> peaks = fleet_plan.stage_peak_memory();
  EXPECT_GT(*std::max_element(peaks.begin(), peaks.end()), hardware::load_cluster("pcie-l4").device.memory_bytes)
      << fleet_plan.label << ": the case needs a stage fuller than an L4";
  for (const BreakEven& b : r.break_evens) EXPECT_GE(b.batch, 1) << b.faster_below << " / " << b.faster_above;
  // The reports name each GPU type with its count and memory (they said "48 devices, 22.49 GiB
  // each", the L4's), and the memory chart holds each stage against its own GPUs: the chosen
  // plan's H100 stage, above an L4's memory, was drawn as not fitting.
  ASSERT_EQ(r.device_kinds.size(), fleet.groups.size());
  const std::string md = compare_markdown(r);
  for (const auto& group : fleet.groups)
    EXPECT_NE(md.find(std::to_string(group.devices) + " " + group.device.name + " of " + format_bytes(group.device.memory_bytes)),
              std::string::npos)
        << md.substr(0, 300);
  const std::string html = compare_html(r);
  const std::size_t chart = html.find("<h2>Memory per pipeline stage</h2>");
  ASSERT_NE(chart, std::string::npos);
  const std::string memory = html.substr(chart, html.find("<h2>", chart + 4) - chart);
  std::size_t unfit_stages = 0;
  for (const StrategyResult& s : r.strategies) {
    const std::vector<double> stage_peaks = s.stage_peak_memory();
    for (std::size_t k = 0; k < stage_peaks.size(); ++k) unfit_stages += stage_peaks[k] > s.stage_capacity_bytes(k);
  }
  std::size_t marked = 0;
  for (std::size_t at = memory.find("does not fit:"); at != std::string::npos; at = memory.find("does not fit:", at + 1)) ++marked;
  EXPECT_EQ(marked, unfit_stages);
  double least = fleet.groups[0].device.usable_memory();
  for (const auto& group : fleet.groups) least = std::min(least, group.device.usable_memory());
  EXPECT_NE(memory.find("capacity by stage (its GPUs): " + format_bytes(least) + " to "), std::string::npos);
}

}  // namespace
}  // namespace symtensor::compiler
