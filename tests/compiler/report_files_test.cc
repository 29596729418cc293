// The report files carry the same numbers as the results: results.csv and results.json
// are parsed back and compared to the StepEstimate and the simulation of each strategy.
#include <filesystem>
#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "compiler/report/compare.h"
#include "compiler/report/report_files.h"
#include "compiler/base/units.h"
#include "hardware/cluster.h"
#include "tests/compiler/report_test_util.h"

namespace symtensor::compiler {
namespace {

class CompareReportTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    CompareOptions o;
    o.model = symtensor::testing::tiny_gpt_path();
    o.bind = "batch=16,seq=32";
    o.strategies = {"symtensor", "dp", "zero3", "megatron", "nonsense"};
    o.megatron = "tp=2,pp=2,mb=1";
    const auto cluster = hardware::scale_cluster(hardware::load_cluster("dgx-a100"), std::nullopt, 4);
    results_ = new CompareResults(run_compare(o, cluster));
    dir_ = new std::string((std::filesystem::path(o.model).parent_path() / "compare").string());
    write_compare_report(*results_, *dir_);
  }
  static void TearDownTestSuite() {
    delete results_;
    delete dir_;
  }
  static const StrategyResult& row(const std::string& strategy) {
    for (const auto& s : results_->strategies)
      if (s.strategy == strategy) return s;
    throw std::runtime_error("no row " + strategy);
  }
  static CompareResults* results_;
  static std::string* dir_;
};
CompareResults* CompareReportTest::results_ = nullptr;
std::string* CompareReportTest::dir_ = nullptr;

TEST_F(CompareReportTest, EveryStrategyHasARowAndFailuresSayWhy) {
  ASSERT_EQ(results_->strategies.size(), 5u);
  EXPECT_FALSE(row("nonsense").ok);
  EXPECT_NE(row("nonsense").error.find("unknown strategy"), std::string::npos) << row("nonsense").error;
  EXPECT_TRUE(row("dp").ok) << row("dp").error;
  EXPECT_TRUE(row("zero3").ok) << row("zero3").error;
  EXPECT_TRUE(row("symtensor").ok) << row("symtensor").error;
}

TEST_F(CompareReportTest, CsvEqualsTheResults) {
  const auto rows = symtensor::testing::parse_csv(symtensor::testing::read_text(*dir_ + "/results.csv"));
  ASSERT_EQ(rows.size(), results_->strategies.size() + 1);
  std::map<std::string, int> col;
  for (std::size_t i = 0; i < rows[0].size(); ++i) col[rows[0][i]] = static_cast<int>(i);
  for (std::size_t r = 1; r < rows.size(); ++r) {
    const auto& s = results_->strategies[r - 1];
    const auto& f = rows[r];
    ASSERT_EQ(f.size(), rows[0].size()) << "row " << r;
    EXPECT_EQ(f[col["strategy"]], s.strategy);
    EXPECT_EQ(f[col["ok"]], s.ok ? "1" : "0");
    if (!s.ok) {
      EXPECT_EQ(f[col["error"]], s.error);
      continue;
    }
    // %.17g round-trips exactly.
    EXPECT_EQ(std::stod(f[col["estimate_step_time_s"]]), s.estimate.step_time_s);
    EXPECT_EQ(std::stod(f[col["step_time_s"]]), s.simulated ? s.simulation.step_time_s : s.estimate.step_time_s);
    EXPECT_EQ(std::stod(f[col["samples_per_s"]]), s.simulated ? s.simulation.samples_per_s : s.estimate.samples_per_s);
    EXPECT_EQ(std::stod(f[col["mfu"]]), s.simulated ? s.simulation.mfu : s.estimate.mfu);
    EXPECT_EQ(std::stod(f[col["tokens_per_s"]]), s.samples_per_s() * 32);  // seq = 32 tokens per sample
    if (s.simulated) {
      EXPECT_EQ(std::stod(f[col["simulated_step_time_s"]]), s.simulation.step_time_s);
      EXPECT_EQ(std::stod(f[col["compute_s"]]), s.simulation.compute_s);
      EXPECT_EQ(std::stod(f[col["bubble_s"]]), s.simulation.bubble_s);
      double peak = 0;
      for (const auto& st : s.simulation.stages) peak = std::max(peak, st.peak_memory_bytes);
      EXPECT_EQ(std::stod(f[col["peak_memory_bytes"]]), peak);
    } else {
      EXPECT_EQ(std::stod(f[col["compute_s"]]), s.estimate.compute_s);
      EXPECT_EQ(std::stod(f[col["peak_memory_bytes"]]), s.estimate.peak_memory);
    }
    EXPECT_EQ(std::stod(f[col["memory_capacity_bytes"]]), hardware::load_cluster("dgx-a100").device.memory_bytes);
  }
}

TEST_F(CompareReportTest, JsonEqualsTheResults) {
  const auto j = nlohmann::json::parse(symtensor::testing::read_text(*dir_ + "/results.json"));
  ASSERT_EQ(j["strategies"].size(), results_->strategies.size());
  EXPECT_EQ(j["devices"], 4);
  EXPECT_EQ(j["bindings"]["batch"].get<double>(), 16);
  for (std::size_t i = 0; i < results_->strategies.size(); ++i) {
    const auto& s = results_->strategies[i];
    const auto& js = j["strategies"][i];
    EXPECT_EQ(js["ok"].get<bool>(), s.ok);
    if (!s.ok) continue;
    EXPECT_EQ(js["estimate"]["step_time_s"].get<double>(), s.estimate.step_time_s);
    EXPECT_EQ(js["estimate"]["compute_s"].get<double>(), s.estimate.compute_s);
    EXPECT_EQ(js["estimate"]["peak_memory_bytes"].get<double>(), s.estimate.peak_memory);
    EXPECT_EQ(js["estimate"]["mfu"].get<double>(), s.estimate.mfu);
    EXPECT_EQ(js["step_time_s"].get<double>(), s.step_time_s());
    if (s.simulated) {
      EXPECT_EQ(js["simulation"]["step_time_s"].get<double>(), s.simulation.step_time_s);
      EXPECT_EQ(js["simulation"]["mfu"].get<double>(), s.simulation.mfu);
      ASSERT_EQ(js["stage_peak_memory_bytes"].size(), s.simulation.stages.size());
      for (std::size_t k = 0; k < s.simulation.stages.size(); ++k)
        EXPECT_EQ(js["stage_peak_memory_bytes"][k].get<double>(), s.simulation.stages[k].peak_memory_bytes);
    }
    if (s.formula) {
      EXPECT_EQ(js["formula"]["per_sample_s"].get<double>(), s.formula->per_sample_s);
    }
  }
  if (results_->chosen >= 0) {
    EXPECT_EQ(j["chosen"], results_->strategies[results_->chosen].label);
  }
  ASSERT_GT(results_->step_lower_bound_s, 0);
  EXPECT_EQ(j["step_lower_bound_s"].get<double>(), results_->step_lower_bound_s);
}

// The lower bound is below every plan's step (estimated and simulated), and every report says it.
TEST_F(CompareReportTest, BoundIsBelowEveryPlanAndReported) {
  for (const auto& s : results_->strategies)
    if (s.ok) {
      EXPECT_LT(results_->step_lower_bound_s, s.estimate.step_time_s) << s.label;
      EXPECT_LT(results_->step_lower_bound_s, s.step_time_s()) << s.label;
    }
  const std::string bound = format_seconds(results_->step_lower_bound_s);
  for (const char* file : {"/report.md", "/report.html"})
    EXPECT_NE(symtensor::testing::read_text(*dir_ + file).find("no plan steps faster than " + bound), std::string::npos) << file;
}

TEST_F(CompareReportTest, ChosenIsTheFastestPlanThatFits) {
  ASSERT_GE(results_->chosen, 0);
  const double best = results_->strategies[results_->chosen].step_time_s();
  for (const auto& s : results_->strategies)
    if (s.ok && s.fits()) {
      EXPECT_LE(best, s.step_time_s()) << s.label;
    }
}

// The formula is built from the analysis's terms; at the bound batch it must give the
// analytic estimate's step time (the same terms, summed the same way).
TEST_F(CompareReportTest, FormulaAtTheBoundBatchIsTheEstimate) {
  for (const auto& s : results_->strategies) {
    if (!s.ok) continue;
    ASSERT_TRUE(s.formula) << s.label << ": " << s.simulation_error;
    EXPECT_NEAR(s.formula->at(16), s.estimate.step_time_s, 1e-9 * s.estimate.step_time_s) << s.label;
    EXPECT_GT(s.formula->per_sample_s, 0) << s.label;  // more samples, more compute
    // GiNaC's form evaluates to the same number.
    const GiNaC::ex v = GiNaC::evalf(s.formula->step_time.subs(batch_symbol() == 16));
    ASSERT_TRUE(GiNaC::is_a<GiNaC::numeric>(v));
    EXPECT_NEAR(GiNaC::ex_to<GiNaC::numeric>(v).to_double(), s.estimate.step_time_s, 1e-9 * s.estimate.step_time_s);
    // Memory: constant + per sample x batch is the estimate's peak at the bound batch.
    EXPECT_NEAR(s.formula->memory_constant + s.formula->memory_per_sample * 16, s.estimate.peak_memory,
                1e-6 * s.estimate.peak_memory);
  }
}

// Both MFUs, each named, in every file: the exact count and 6N + 12Lhs, the latter the same
// per-token FLOPs over whichever evaluator's throughput.
TEST_F(CompareReportTest, EveryFileHasBothMfus) {
  const PalmFlops& palm = results_->palm;
  ASSERT_TRUE(palm.applies()) << palm.not_applicable;
  for (const char* file : {"/report.md", "/report.html"}) {
    const std::string text = symtensor::testing::read_text(*dir_ + file);
    EXPECT_NE(text.find(kExactMfuLabel), std::string::npos) << file;
    EXPECT_NE(text.find(palm_mfu_label(palm)), std::string::npos) << file;
  }
  const auto rows = symtensor::testing::parse_csv(symtensor::testing::read_text(*dir_ + "/results.csv"));
  std::map<std::string, int> col;
  for (std::size_t i = 0; i < rows[0].size(); ++i) col[rows[0][i]] = static_cast<int>(i);
  ASSERT_TRUE(col.count("mfu_6n"));
  const auto j = nlohmann::json::parse(symtensor::testing::read_text(*dir_ + "/results.json"));
  EXPECT_EQ(j["palm_flops"]["per_token"].get<double>(), palm.per_token);
  const double peak = 4 * hardware::load_cluster("dgx-a100").device.peak(hardware::Precision::bf16);
  for (std::size_t i = 0; i < results_->strategies.size(); ++i) {
    const auto& s = results_->strategies[i];
    const auto& field = rows[i + 1][col["mfu_6n"]];
    if (!s.ok) {
      EXPECT_EQ(field, "");
      continue;
    }
    ASSERT_TRUE(s.mfu_6n()) << s.label;
    EXPECT_NEAR(*s.mfu_6n(), palm.per_token * 32 * s.samples_per_s() / peak, 1e-12 * *s.mfu_6n()) << s.label;
    EXPECT_EQ(std::stod(field), *s.mfu_6n()) << s.label;
    const auto& js = j["strategies"][i];
    EXPECT_EQ(js["mfu_6n"].get<double>(), *s.mfu_6n()) << s.label;
    EXPECT_EQ(js["estimate"]["mfu_6n"].get<double>(), *s.estimate.mfu_6n) << s.label;
    if (s.simulated) {
      EXPECT_EQ(js["simulation"]["mfu_6n"].get<double>(), *s.simulation.mfu_6n) << s.label;
    }
  }
}

TEST_F(CompareReportTest, HtmlIsSelfContainedWithEveryChart) {
  const std::string html = symtensor::testing::read_text(*dir_ + "/report.html");
  for (const char* needle : {"class=\"chart breakdown\"", "class=\"chart memory\"", "class=\"strategies\"",
                             "class=\"formulas\"", "class=\"cuts\"", "T(batch) = "})
    EXPECT_NE(html.find(needle), std::string::npos) << needle;
  if (results_->strategies[results_->chosen].simulated) {
    EXPECT_NE(html.find("class=\"chart gantt\""), std::string::npos);
  }
  for (const char* banned : {"http://", "https://", "<script", "@import", "<link"}) {
    std::string h = html;
    // The SVG namespace is an identifier, not a fetch.
    for (std::size_t p; (p = h.find("http://www.w3.org/2000/svg")) != std::string::npos;) h.erase(p, 26);
    EXPECT_EQ(h.find(banned), std::string::npos) << banned;
  }
  EXPECT_NE(symtensor::testing::read_text(*dir_ + "/report.md").find("| strategy |"), std::string::npos);
}

}  // namespace
}  // namespace symtensor::compiler
