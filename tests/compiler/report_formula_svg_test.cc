// Break-even points solved from step-time formulas, the sweep's arguments, and the SVG
// layer's ticks and charts.
#include <cmath>

#include <regex>

#include <gtest/gtest.h>

#include "compiler/report/charts.h"
#include "compiler/report/plan_explain.h"
#include "compiler/report/report_files.h"
#include "compiler/report/step_formula.h"
#include "compiler/report/svg.h"
#include "compiler/report/sweep.h"

namespace symtensor::compiler {
namespace {

StepFormula affine(double constant, double slope) {
  StepFormula f;
  f.step_time = GiNaC::ex(constant) + GiNaC::ex(slope) * batch_symbol();
  f.constant_s = constant;
  f.per_sample_s = slope;
  f.valid_to = INFINITY;
  return f;
}

TEST(ReportBreakEven, TwoLinesCrossWhereHandArithmeticSays) {
  // T_a = 1 + 0.01 b, T_b = 3 + 0.005 b: equal at b = (3 - 1) / (0.01 - 0.005) = 400, T = 5.
  const StepFormula a = affine(1, 0.01), b = affine(3, 0.005);
  const auto points = break_even_points({{"a", &a}, {"b", &b}});
  ASSERT_EQ(points.size(), 1u);
  EXPECT_NEAR(points[0].batch, 400, 1e-9);
  EXPECT_NEAR(points[0].step_time_s, 5, 1e-12);
  EXPECT_EQ(points[0].faster_below, "a");  // smaller constant
  EXPECT_EQ(points[0].faster_above, "b");  // smaller slope
  EXPECT_TRUE(points[0].within_validity);
}

TEST(ReportBreakEven, ParallelOrNegativeCrossingsAreNotReported) {
  const StepFormula a = affine(1, 0.01), b = affine(2, 0.01), c = affine(3, 0.02);
  // a and b never cross; a and c would cross at b = -200; b and c at -100.
  EXPECT_TRUE(break_even_points({{"a", &a}, {"b", &b}, {"c", &c}}).empty());
}

TEST(ReportBreakEven, CrossingsBelowOneSampleAreNotReported) {
  // compare's ZeRO-3 and Megatron rows on a fleet: T = 0.09693 + 0.05152 b and
  // 0.1049 + 0.01787 b cross at b = 0.00797 / 0.03365 = 0.24 samples, which no plan runs.
  const StepFormula zero3 = affine(0.09693, 0.05152), megatron = affine(0.1049, 0.01787);
  EXPECT_TRUE(break_even_points({{"zero3", &zero3}, {"megatron", &megatron}}).empty());
  // Two samples are a batch: 1 + 0.02 b and 1.02 + 0.01 b cross at b = 2.
  const StepFormula a = affine(1, 0.02), b = affine(1.02, 0.01);
  const auto points = break_even_points({{"a", &a}, {"b", &b}});
  ASSERT_EQ(points.size(), 1u);
  EXPECT_NEAR(points[0].batch, 2, 1e-9);
}

TEST(ReportBreakEven, OutsideTheValidRangeIsFlagged) {
  StepFormula a = affine(1, 0.01), b = affine(3, 0.005);
  a.valid_to = 100;  // the formula holds only up to batch 100
  const auto points = break_even_points({{"a", &a}, {"b", &b}});
  ASSERT_EQ(points.size(), 1u);
  EXPECT_FALSE(points[0].within_validity);
}

TEST(ReportSweep, GpuCountsParse) {
  EXPECT_EQ(parse_gpu_counts("8..64"), (std::vector<int>{8, 16, 32, 64}));
  EXPECT_EQ(parse_gpu_counts("8,24,1024"), (std::vector<int>{8, 24, 1024}));
  EXPECT_EQ(parse_gpu_counts("8..8"), (std::vector<int>{8}));
  EXPECT_THROW(parse_gpu_counts("64..8"), std::runtime_error);
  EXPECT_THROW(parse_gpu_counts("8,x"), std::runtime_error);
  EXPECT_THROW(parse_gpu_counts("0"), std::runtime_error);
}

TEST(ReportSweep, ClusterSizes) {
  EXPECT_EQ(cluster_of_size("dgx-a100", 4).num_devices(), 4);
  EXPECT_EQ(cluster_of_size("dgx-a100", 64).num_devices(), 64);
  EXPECT_EQ(cluster_of_size("dgx-a100", 64).devices_per_node(), 8);
  EXPECT_THROW(cluster_of_size("dgx-a100", 12), std::runtime_error);
}

TEST(ReportSvg, NiceTicksStepOneTwoFive) {
  EXPECT_EQ(svg::nice_ticks(0, 10, 5), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(svg::nice_ticks(0, 0.9, 3), (std::vector<double>{0, 0.5}));  // raw 0.3 -> step 0.5
  EXPECT_EQ(svg::nice_ticks(0, 1000, 2), (std::vector<double>{0, 500, 1000}));
}

TEST(ReportSvg, EscapesText) {
  EXPECT_EQ(svg::escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
}

TEST(ReportSvg, FrameMapsDataToPixels) {
  const svg::Frame f(100, 10, 400, 200, {0, 4, "x"}, {0, 100, "y"});
  EXPECT_DOUBLE_EQ(f.px(0), 100);
  EXPECT_DOUBLE_EQ(f.px(2), 300);
  EXPECT_DOUBLE_EQ(f.py(0), 210);  // y grows downwards
  EXPECT_DOUBLE_EQ(f.py(100), 10);
  const svg::Frame g(0, 0, 300, 100, {8, 64, "GPUs", true}, {0, 1, ""});
  EXPECT_DOUBLE_EQ(g.px(8), 0);
  EXPECT_DOUBLE_EQ(g.px(16), 100);  // log2: 8, 16, 32, 64 evenly spaced
  EXPECT_DOUBLE_EQ(g.px(64), 300);
}

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

TEST(ReportCharts, BreakdownHasOneSegmentPerComponentAndBar) {
  const std::string svg = breakdown_chart({"compute", "comm"}, {{"dp", {1.0, 0.5}}, {"tp", {0.8, 0.1}}});
  EXPECT_EQ(count(svg, "class=\"segment\""), 4u);
  EXPECT_NE(svg.find("step time (s)"), std::string::npos);
  EXPECT_NE(svg.find("dp comm: 500 ms"), std::string::npos);
}

TEST(ReportCharts, MemoryBarsOverCapacityAreMarked) {
  const std::string svg = memory_chart({{"a", {10e9, 90e9}, {}}}, 80e9);
  EXPECT_EQ(count(svg, "class=\"stage-memory\""), 2u);
  EXPECT_EQ(count(svg, "#D55E00"), 1u);  // the 90 GB stage
  EXPECT_NE(svg.find("capacity 74.51 GiB"), std::string::npos);
  // The capacity is named above the plot (#34: on the line it ran through a non-fitting bar
  // and its "does not fit" label), beside a dashed sample of the line.
  EXPECT_TRUE(std::regex_search(svg, std::regex(R"(<line [^>]*y1="11.0" [^>]*y2="11.0" stroke="#CC0000" stroke-width="2.0" )"
                                                R"(stroke-dasharray="6,4"/>\n<text x="[0-9.]+" y="15.0" [^>]*>capacity 74.51 GiB</text>)")))
      << svg;  // the plot starts at y = 20
}

// A mixed fleet's plan (compare on dgx-h100x2+dgx-a100x2+pcie-l4x2): a stage on 80 GB GPUs and
// one on 24 GB GPUs, each held against its own; against the fleet's least memory (the chart's
// one capacity before), the 60 GB stage that fits was drawn as not fitting.
TEST(ReportCharts, MemoryBarsAreHeldAgainstTheirOwnStagesCapacity) {
  const std::string svg = memory_chart({{"fleet", {60e9, 20e9}, {80e9, 24e9}}, {"tight", {25e9}, {24e9}}}, 24e9);
  EXPECT_EQ(count(svg, "does not fit:"), 1u) << svg;  // the 25 GB stage on 24 GB GPUs alone
  EXPECT_NE(svg.find("fleet stage 0: 55.88 GiB of 74.51 GiB"), std::string::npos) << svg;
  EXPECT_NE(svg.find("tight stage 0: 23.28 GiB of 22.35 GiB (does not fit)"), std::string::npos) << svg;
  // A capacity mark over each bar, and the legend's sample: no line across the plot.
  EXPECT_EQ(count(svg, "stroke=\"#CC0000\""), 4u) << svg;
  EXPECT_NE(svg.find("capacity by stage (its GPUs): 22.35 GiB to 74.51 GiB"), std::string::npos) << svg;
  // One capacity for every stage: one line, as before.
  const std::string uniform = memory_chart({{"a", {60e9}, {80e9}}, {"b", {20e9}, {80e9}}}, 24e9);
  EXPECT_EQ(count(uniform, "stroke=\"#CC0000\""), 2u) << uniform;
  EXPECT_EQ(count(uniform, "does not fit:"), 0u) << uniform;
  EXPECT_NE(uniform.find("capacity 74.51 GiB"), std::string::npos) << uniform;
}

TEST(ReportCharts, GanttDrawsEveryBar) {
  Timeline t;
  t.rows = {"stage0 compute", "stage1 compute"};
  t.bars = {{0, 0, 1, BarKind::forward, "f0"}, {1, 1, 2, BarKind::forward, "f0"}, {0, 2, 3, BarKind::backward, "b0"}};
  t.step_time_s = 3;
  const std::string svg = gantt_chart(t);
  EXPECT_EQ(count(svg, "class=\"task\""), 3u);
  EXPECT_NE(svg.find("stage1 compute"), std::string::npos);
}

TEST(ReportCharts, LinesHaveAPointPerDatum) {
  const std::string svg = line_chart({{"a", {{8, 1}, {16, 2}}}, {"b", {{8, 3}}}}, "GPUs", "tokens/s", "scaling");
  EXPECT_EQ(count(svg, "class=\"point\""), 3u);
  EXPECT_EQ(count(svg, "<polyline"), 1u);  // one point draws no line
}

TEST(ReportExplain, LayerPatternReplacesNumbers) {
  EXPECT_EQ(layer_pattern("h.12/attn/MatMul_3"), "h.*/attn/MatMul_*");
  EXPECT_EQ(layer_pattern("lm_head"), "lm_head");
}

TEST(ReportFiles, CsvFieldsAndExactNumbers) {
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"x\""), "\"say \"\"x\"\"\"");
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(std::stod(exact(0.1 + 0.2)), 0.1 + 0.2);
  EXPECT_EQ(exact(INFINITY), "inf");
}

}  // namespace
}  // namespace symtensor::compiler
