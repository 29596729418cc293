// What a newcomer reads in the compare and sweep reports (#34): a memory chart whose axis
// lets the plans that fit be told apart, a largest batch that a plan can run, Markdown
// tables that are tables, plan labels that say every degree in words.
#include <cmath>
#include <filesystem>
#include <regex>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "compiler/report/charts.h"
#include "compiler/report/compare.h"
#include "compiler/report/report_files.h"
#include "compiler/base/units.h"
#include "hardware/cluster.h"
#include "tests/compiler/report_test_util.h"

namespace symtensor::compiler {
namespace {

constexpr double kNewcomerGiB = 1024.0 * 1024 * 1024;

// Every rect of class stage-memory*: its height in pixels, by the hover title.
std::map<std::string, double> memory_bar_heights(const std::string& svg) {
  std::map<std::string, double> out;
  const std::regex rect(R"re(<rect [^>]*height="([0-9.]+)"[^>]*class="stage-memory[^"]*"><title>([^<]*)</title>)re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), rect); it != std::sregex_iterator(); ++it)
    out[(*it)[2]] = std::stod((*it)[1]);
  return out;
}

// 64 and 74.5 GiB of 80 GiB beside a plan needing 800 GiB: the axis stops at twice the
// capacity, so the two that fit stay readable, and the 800 GiB bar says it does not fit.
TEST(MemoryChart, AxisIsClippedNearTheCapacityAndTheRestSaysDoesNotFit) {
  const std::string svg =
      memory_chart({{"a", {64 * kNewcomerGiB}, {}}, {"b", {74.5 * kNewcomerGiB}, {}}, {"huge", {800 * kNewcomerGiB}, {}}}, 80 * kNewcomerGiB);
  const auto h = memory_bar_heights(svg);
  ASSERT_EQ(h.size(), 3u) << svg;
  const double a = h.at("a stage 0: " + format_bytes(64 * kNewcomerGiB));
  const double b = h.at("b stage 0: " + format_bytes(74.5 * kNewcomerGiB));
  const double huge = h.at("huge stage 0: " + format_bytes(800 * kNewcomerGiB) + " (does not fit)");
  // The plot is 240 px high; the axis at 2 x 80 GiB x 1.05 puts 64 GiB at 91 px.
  EXPECT_GT(a, 80) << svg;
  EXPECT_GT(b - a, 12) << "64 and 74.5 GiB must differ visibly";
  EXPECT_DOUBLE_EQ(huge, 240);  // up to the top, no further
  EXPECT_NE(svg.find("does not fit: " + format_bytes(800 * kNewcomerGiB)), std::string::npos) << svg;
  EXPECT_NE(svg.find("stage-memory clipped"), std::string::npos);
  // The tick labels stop at the clipped axis (168 GiB).
  const std::regex tick(R"re(text-anchor="end" fill="#444">([0-9.]+)</text>)re");
  double top_tick = 0;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), tick); it != std::sregex_iterator(); ++it)
    top_tick = std::max(top_tick, std::stod((*it)[1]));
  EXPECT_GE(top_tick, 150);
  EXPECT_LE(top_tick, 168);
  // Only the plan above the capacity is marked.
  std::size_t marks = 0;
  for (std::size_t at = 0; (at = svg.find("does not fit:", at)) != std::string::npos; ++at) ++marks;
  EXPECT_EQ(marks, 1u);
}

TEST(MemoryChart, AllFittingKeepsTheFullAxis) {
  const std::string svg = memory_chart({{"a", {10 * kNewcomerGiB}, {}}, {"b", {20 * kNewcomerGiB}, {}}}, 80 * kNewcomerGiB);
  EXPECT_EQ(svg.find("does not fit"), std::string::npos);
  EXPECT_EQ(svg.find("clipped"), std::string::npos);
}

class NewcomerCompareTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    CompareOptions o;
    o.model = symtensor::testing::tiny_gpt_path();
    o.bind = "batch=16,seq=32";
    o.strategies = {"symtensor", "dp", "megatron", "nonsense"};
    o.megatron = "tp=2,pp=2,mb=1";
    o.simulate = false;
    const auto cluster = hardware::scale_cluster(hardware::load_cluster("dgx-a100"), std::nullopt, 4);
    results_ = new CompareResults(run_compare(o, cluster));
    dir_ = new std::string((std::filesystem::path(o.model).parent_path() / "newcomer").string());
    write_compare_report(*results_, *dir_);
  }
  static void TearDownTestSuite() {
    delete results_;
    delete dir_;
  }
  static CompareResults* results_;
  static std::string* dir_;
};
CompareResults* NewcomerCompareTest::results_ = nullptr;
std::string* NewcomerCompareTest::dir_ = nullptr;

// The cells of a Markdown table row: split at '|' not escaped as "\|".
std::size_t markdown_cells(const std::string& row) {
  std::size_t pipes = 0;
  for (std::size_t i = 0; i < row.size(); ++i)
    if (row[i] == '|' && (i == 0 || row[i - 1] != '\\')) ++pipes;
  return pipes - 1;
}

// Every table of report.md: a header, a separator row of as many "---" cells, rows of as many cells.
TEST_F(NewcomerCompareTest, EveryMarkdownTableHasASeparatorOfItsWidth) {
  std::istringstream in(symtensor::testing::read_text(*dir_ + "/report.md"));
  std::vector<std::vector<std::string>> tables;
  bool in_table = false;
  for (std::string line; std::getline(in, line);) {
    const bool row = !line.empty() && line.front() == '|';
    if (row && !in_table) tables.emplace_back();
    if (row) tables.back().push_back(line);
    in_table = row;
  }
  ASSERT_GE(tables.size(), 4u);  // strategies, breakdown, memory, chosen plan
  const std::regex separator(R"(^\|(\s*:?-{3,}:?\s*\|)+$)");
  bool breakdown_seen = false;
  for (const auto& t : tables) {
    ASSERT_GE(t.size(), 2u) << t[0];
    EXPECT_TRUE(std::regex_match(t[1], separator)) << t[1];
    const std::size_t width = markdown_cells(t[0]);
    for (const auto& row : t) EXPECT_EQ(markdown_cells(row), width) << t[0] << "\n" << row;
    if (t[0].find("| strategy | compute |") == 0) breakdown_seen = true;
  }
  EXPECT_TRUE(breakdown_seen);
}

// The largest batch that fits is a batch the plan can run: a multiple of dp x micro-batches.
TEST_F(NewcomerCompareTest, LargestBatchThatFitsIsAMultipleOfTheGranule) {
  int formulas = 0;
  const std::string md = symtensor::testing::read_text(*dir_ + "/report.md");
  const std::string html = symtensor::testing::read_text(*dir_ + "/report.html");
  for (const auto& s : results_->strategies) {
    if (!s.ok || !s.formula) continue;
    ++formulas;
    const StepFormula& f = *s.formula;
    ASSERT_GE(f.batch_granule, 1);
    if (!std::isfinite(f.max_batch_that_fits)) continue;
    EXPECT_GE(f.max_batch_that_fits, 0) << s.label;
    EXPECT_EQ(std::fmod(f.max_batch_that_fits, f.batch_granule), 0) << s.label << ": " << f.max_batch_that_fits;
    // One granule more does not fit.
    const double next = f.max_batch_that_fits + f.batch_granule;
    EXPECT_GT(f.memory_constant + f.memory_per_sample * next, results_->device_memory_bytes * 0.999) << s.label;
    const std::string text = describe_max_batch(f);
    EXPECT_EQ(text, format_count(f.max_batch_that_fits) + " (a multiple of " + format_count(f.batch_granule) + ")");
    EXPECT_NE(md.find("largest batch that fits: " + text), std::string::npos) << s.label;
    EXPECT_NE(html.find(text), std::string::npos) << s.label;
  }
  EXPECT_GE(formulas, 2);
}

// Labels say every degree and the batching in words: "m=16" read like a micro-batch of 16.
TEST_F(NewcomerCompareTest, PlanLabelsSayDegreesAndMicroBatchesInWords) {
  std::map<std::string, std::string> labels;
  for (const auto& s : results_->strategies)
    if (s.ok) labels[s.strategy] = s.label;
  EXPECT_EQ(labels["megatron"].rfind("megatron tp=2 dp=1 pp=2 cp=1 ep=1, 16 micro-batches of 1 sample", 0), 0u)
      << labels["megatron"];
  EXPECT_EQ(labels["dp"].rfind("dp tp=1 dp=4 pp=1 cp=1 ep=1, 1 micro-batch of 4 samples", 0), 0u) << labels["dp"];
  const std::regex words(R"(^symtensor tp=[0-9]+ dp=[0-9]+ pp=[0-9]+ cp=1 ep=1, [0-9]+ micro-batch(es)? of [0-9]+ samples?)");
  EXPECT_TRUE(std::regex_search(labels["symtensor"], words)) << labels["symtensor"];
  const std::string md = symtensor::testing::read_text(*dir_ + "/report.md");
  for (const auto& [strategy, label] : labels) EXPECT_NE(md.find("| " + label + " |"), std::string::npos) << label;
  EXPECT_EQ(md.find(",m="), std::string::npos);
}

// Memory "by class" names the layer's parts, not ONNX op types (Sigmoid, Pow, Mul), in the
// results file every strategy's stages are written to.
TEST_F(NewcomerCompareTest, ResultsFileListsActivationsByTheLayersParts) {
  const auto j = nlohmann::json::parse(symtensor::testing::read_text(*dir_ + "/results.json"));
  const std::set<std::string> parts = {"embedding", "attention", "MLP / experts", "norms", "head and loss", "other"};
  int stages = 0;
  for (const auto& row : j.at("strategies")) {
    if (!row.at("ok").get<bool>()) continue;
    for (const auto& stage : row.at("memory_breakdown")) {
      ++stages;
      std::set<std::string> named;
      for (const auto& [name, bytes] : stage.at("activations_by_class_per_micro_batch_bytes").items()) {
        EXPECT_TRUE(parts.count(name)) << row.at("label") << ": " << name;
        named.insert(name);
      }
      EXPECT_TRUE(named.count("attention") && named.count("MLP / experts") && named.count("norms")) << row.at("label");
    }
  }
  EXPECT_GE(stages, 3);  // symtensor, dp, megatron (two stages)
}

// A device too small for the model states: no batch fits, said in words, never a negative batch.
TEST(NewcomerCompare, NoBatchFitsIsSaidNotNegative) {
  CompareOptions o;
  o.model = symtensor::testing::tiny_gpt_path();
  o.bind = "batch=16,seq=32";
  o.strategies = {"dp"};
  o.simulate = false;
  auto cluster = hardware::scale_cluster(hardware::load_cluster("dgx-a100"), std::nullopt, 4);
  cluster.device.memory_bytes = 1024;  // 1 KiB: the tiny GPT's weights alone exceed it
  const CompareResults r = run_compare(o, cluster);
  ASSERT_EQ(r.strategies.size(), 1u);
  ASSERT_TRUE(r.strategies[0].ok) << r.strategies[0].error;
  ASSERT_TRUE(r.strategies[0].formula);
  const StepFormula& f = *r.strategies[0].formula;
  EXPECT_EQ(f.max_batch_that_fits, 0);
  EXPECT_EQ(describe_max_batch(f), "none: even a batch of " + format_count(f.batch_granule) + " does not fit");
  EXPECT_NE(compare_markdown(r).find("largest batch that fits: none: even a batch of"), std::string::npos);
}

}  // namespace
}  // namespace symtensor::compiler
