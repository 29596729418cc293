// `compare` on a mixed fleet (#32): the symtensor row is the fleet search's plan, the megatron
// row Megatron-best as the issue defines it (the faster of its best plan on one group alone and
// its uniform plan over every GPU at the slowest pace), dp and zero3 priced on the fleet's
// uniform view, a strategy that cannot be made a row saying why; the report shows the groups.
#include <filesystem>
#include <regex>
#include <set>

#include <gtest/gtest.h>

#include "compiler/report/compare.h"
#include "compiler/report/report_files.h"
#include "hardware/stack.h"
#include "onnx_models/model_zoo.h"
#include "onnx_models/presets.h"
#include "tests/compiler/report_test_util.h"
#include "tests/temp_path.h"

namespace symtensor::compiler {
namespace {

class CompareFleetTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // LLaMA-2 7B's layer at 16 layers, 2k tokens, on H100 x8 beside A100 x16 (fleet_search_test's fleet).
    models::ModelConfig config = models::apply_overrides(models::preset_config("llama2-7b"), [] {
      models::Overrides o;
      o.layers = 16;
      o.seq = 2048;
      return o;
    }());
    config.weights = models::Weights::none;
    CompareOptions o;
    o.model = symtensor::testing::temp_path("fleet_llama.onnx");
    models::save_model(models::build_model(config), o.model);
    o.bind = "batch=96,seq=2048";
    o.strategies = {"symtensor", "megatron", "dp", "zero3", "nonsense"};
    cluster_ = new hardware::Cluster(
        hardware::with_software(hardware::load_cluster("dgx-h100x1+dgx-a100x2"), hardware::Software{}));
    results_ = new CompareResults(run_compare(o, *cluster_));
    dir_ = new std::string(symtensor::testing::temp_path("fleet_compare"));
    write_compare_report(*results_, *dir_);
  }
  static void TearDownTestSuite() {
    delete results_;
    delete dir_;
    delete cluster_;
  }
  static const StrategyResult& fleet_row(const std::string& strategy) {
    for (const auto& s : results_->strategies)
      if (s.strategy == strategy) return s;
    throw std::runtime_error("no row " + strategy);
  }
  // "  Megatron-best (a): 0.843 s - ..." in the fleet lines: the seconds.
  static double fleet_line_seconds(const std::string& what) {
    std::smatch m;
    const std::regex re("  " + what + ": ([0-9.]+) s");
    if (!std::regex_search(results_->fleet, m, re)) throw std::runtime_error("no line " + what + " in " + results_->fleet);
    return std::stod(m[1]);
  }
  static CompareResults* results_;
  static std::string* dir_;
  static hardware::Cluster* cluster_;
};
CompareResults* CompareFleetTest::results_ = nullptr;
std::string* CompareFleetTest::dir_ = nullptr;
hardware::Cluster* CompareFleetTest::cluster_ = nullptr;

TEST_F(CompareFleetTest, SymTensorRowIsTheFleetPlanAndNoSlowerThanMegatronBest) {
  const StrategyResult& st = fleet_row("symtensor");
  const StrategyResult& mg = fleet_row("megatron");
  ASSERT_TRUE(st.ok) << st.error;
  ASSERT_TRUE(mg.ok) << mg.error;
  ASSERT_TRUE(st.simulated) << st.simulation_error;
  ASSERT_TRUE(mg.simulated) << mg.simulation_error;
  EXPECT_TRUE(st.fits());
  EXPECT_LE(st.step_time_s(), mg.step_time_s());
  // The row's simulation is the fleet search's (printed to the ms in the fleet lines).
  EXPECT_NEAR(st.step_time_s(), fleet_line_seconds("SymTensor"), 0.0006);
  // Megatron-best: the faster of (a) and (b), both of which the fleet lines state.
  EXPECT_NEAR(mg.step_time_s(), std::min(fleet_line_seconds("Megatron-best \\(a\\)"), fleet_line_seconds("Megatron-best \\(b\\)")),
              0.0006);
  EXPECT_EQ(mg.label.rfind("Megatron-best", 0), 0u) << mg.label;
  // This fleet's search places work by speed: batch shares by group speed (a pipeline whose
  // stages each lie inside a group is slower here).
  EXPECT_NE(st.label.find("batch shares by speed"), std::string::npos) << st.label;
  ASSERT_GE(results_->chosen, 0);
  EXPECT_EQ(results_->strategies[results_->chosen].strategy, "symtensor");
}

TEST_F(CompareFleetTest, UniformRowsRunAtTheSlowestGroupAndFailuresSayWhy) {
  ASSERT_EQ(results_->strategies.size(), 5u);
  const double least_memory = std::min(cluster_->groups[0].device.memory_bytes, cluster_->groups[1].device.memory_bytes);
  for (const char* name : {"dp", "zero3"}) {
    const StrategyResult& s = fleet_row(name);
    ASSERT_TRUE(s.ok) << name << ": " << s.error;
    // Every rank the same share: the whole fleet (8 + 16 GPUs), the least memory of its groups.
    ASSERT_TRUE(s.plan);
    EXPECT_GT(s.estimate.memory_capacity, 0.9 * least_memory) << name;  // usable: the profile's less what the stack keeps
    EXPECT_LE(s.estimate.memory_capacity, least_memory) << name;
    EXPECT_NE(s.label.find("dp=24"), std::string::npos) << name << ": " << s.label;
    EXPECT_EQ(s.plan->global_batch, 96) << name;
  }
  // Nothing is faster than the fleet plan with every rank at the slowest pace.
  EXPECT_GE(fleet_row("zero3").step_time_s(), fleet_row("symtensor").step_time_s());
  const StrategyResult& bad = fleet_row("nonsense");
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.error.find("mixed fleet dgx-h100x1+dgx-a100x2"), std::string::npos) << bad.error;
  EXPECT_NE(bad.error.find("unknown strategy"), std::string::npos) << bad.error;
  EXPECT_EQ(bad.error.find('\n'), std::string::npos) << bad.error;
  // No bound on the uniform view: it bounds no plan placing work by speed.
  EXPECT_EQ(results_->step_lower_bound_s, 0);
}

// Batch shares simulate one stage per pipeline stage and group: each held against its own
// group's usable memory (H100 85.5 GB, A100 85.9 GB), which the row's memory figures follow.
TEST_F(CompareFleetTest, BatchShareStagesAreHeldAgainstTheirOwnGroupsMemory) {
  const StrategyResult& st = fleet_row("symtensor");
  ASSERT_TRUE(st.simulated) << st.simulation_error;
  ASSERT_EQ(st.simulation.stages.size(), 2u) << st.label;
  std::set<int> groups;
  for (std::size_t k = 0; k < st.simulation.stages.size(); ++k) {
    const int g = st.simulation.stages[k].group;
    ASSERT_GE(g, 0) << st.simulation.stages[k].name;
    groups.insert(g);
    EXPECT_EQ(st.stage_capacity_bytes(k), cluster_->groups[g].device.usable_memory()) << st.simulation.stages[k].name;
  }
  EXPECT_EQ(groups.size(), 2u);
  EXPECT_NE(cluster_->groups[0].device.usable_memory(), cluster_->groups[1].device.usable_memory());
  // The row's capacity is one of those stages' own, beside that stage's peak.
  const std::size_t t = st.tightest_stage();
  EXPECT_EQ(results_->row_memory_bytes(st), cluster_->groups[st.simulation.stages[t].group].device.usable_memory());
  EXPECT_EQ(st.peak_memory_bytes(), st.simulation.stages[t].peak_memory_bytes);
}

TEST_F(CompareFleetTest, ReportShowsTheGroupsAndTheirStages) {
  for (const char* file : {"/report.md", "/report.html"}) {
    const std::string text = symtensor::testing::read_text(*dir_ + file);
    EXPECT_NE(text.find("Mixed fleet: the plan by group"), std::string::npos) << file;
    EXPECT_NE(text.find("group 1: H100-SXM5-80GB x8"), std::string::npos) << file;
    EXPECT_NE(text.find("group 2: A100-SXM4-80GB x16"), std::string::npos) << file;
    EXPECT_NE(text.find("Megatron-best (b)"), std::string::npos) << file;
  }
  // The groups' micro-batches per replica, stated per group: the H100s' replicas take more.
  std::smatch m;
  std::string rest = results_->fleet;
  std::vector<int> counts;
  const std::regex re("([0-9]+) micro-batch\\(es\\) per replica");
  while (std::regex_search(rest, m, re)) {
    counts.push_back(std::stoi(m[1]));
    rest = m.suffix();
  }
  ASSERT_EQ(counts.size(), 2u) << results_->fleet;
  EXPECT_GT(counts[0], counts[1]) << results_->fleet;
  EXPECT_NE(results_->fleet.find("batch shares: dgx-h100: "), std::string::npos) << results_->fleet;
}

}  // namespace
}  // namespace symtensor::compiler
