// The sweep page as a newcomer reads it (#34): the fastest point beside the cheapest, one's
// own prices with --price (and the others marked illustrative in the table itself), a
// y-axis title that does not sit on the tick labels, and equal-cost lines that do not hide
// one another.
#include <regex>

#include <gtest/gtest.h>

#include "compiler/report/charts.h"
#include "compiler/report/report_files.h"
#include "compiler/report/sweep.h"
#include "compiler/report/sweep_merge.h"
#include "compiler/base/units.h"
#include "tests/compiler/report_test_util.h"

namespace symtensor::compiler {
namespace {

SweepPoint priced_point(const std::string& cluster, int gpus, double tokens_per_s, double price) {
  SweepPoint p;
  p.cluster = cluster;
  p.gpus = gpus;
  p.ok = true;
  p.strategy = "symtensor";
  p.tokens_per_s = tokens_per_s;
  p.samples_per_s = tokens_per_s / 1000;
  p.step_time_s = 1;
  p.price_per_gpu_hour = price;
  p.time_to_train_s = 1e9 / tokens_per_s;
  p.cost_usd = gpus * p.time_to_train_s / 3600 * price;
  p.cost_per_million_tokens = p.cost_usd / 1e9 * 1e6;
  return p;
}

// dgx-h100 x8 is the cheapest, dgx-h100 x64 the fastest; dgx-h100's price is the user's.
SweepResults priced_sweep() {
  SweepResults r;
  r.model = "m.onnx";
  r.tokens = 1e9;
  r.tokens_per_sample = 1000;
  r.clusters = {"dgx-a100", "dgx-h100"};
  r.gpus = {8, 64};
  r.prices_given = {{"dgx-h100", 2.5}};
  r.points = {priced_point("dgx-a100", 8, 2e4, 2.0), priced_point("dgx-a100", 64, 1.2e5, 2.0), priced_point("dgx-h100", 8, 5e4, 2.5),
              priced_point("dgx-h100", 64, 3.5e5, 2.5)};
  return r;
}

TEST(SweepNewcomer, FastestIsSaidBesideCheapest) {
  const SweepResults r = priced_sweep();
  ASSERT_EQ(fastest_point(r), &r.points[3]);
  ASSERT_EQ(cheapest_point(r), &r.points[2]);  // 8 x 5.6 h x $2.5 = $111 < 8 x 13.9 h x $2 = $222
  const std::string html = sweep_html(r), md = sweep_markdown(r);
  EXPECT_NE(html.find("<b>Fastest: dgx-h100 x64</b>"), std::string::npos) << html;
  EXPECT_NE(html.find("<b>Cheapest: dgx-h100 x8</b>"), std::string::npos);
  EXPECT_NE(md.find("**Fastest: dgx-h100 x64** with symtensor: " + format_duration(r.points[3].time_to_train_s) + ", " +
                    format_usd(r.points[3].cost_usd) + " at $2.50/GPU-hour (yours)."),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("**Cheapest: dgx-h100 x8** with symtensor: " + format_duration(r.points[2].time_to_train_s) + ", " +
                    format_usd(r.points[2].cost_usd) + " at $2.50/GPU-hour (yours)."),
            std::string::npos)
      << md;
}

// The price is in the table, row by row, with where it came from.
TEST(SweepNewcomer, EveryPriceSaysWhetherItIsYoursOrIllustrative) {
  const SweepResults r = priced_sweep();
  EXPECT_EQ(describe_price(r, r.points[0]), "$2.00/GPU-hour (illustrative)");
  EXPECT_EQ(describe_price(r, r.points[2]), "$2.50/GPU-hour (yours)");
  SweepPoint free = r.points[0];
  free.price_per_gpu_hour = 0;
  EXPECT_EQ(describe_price(r, free), "no price");
  const std::string html = sweep_html(r), md = sweep_markdown(r);
  for (const std::string& page : {html, md}) {
    std::size_t illustrative = 0, yours = 0;
    for (std::size_t at = 0; (at = page.find("/GPU-hour (illustrative)", at)) != std::string::npos; ++at) ++illustrative;
    for (std::size_t at = 0; (at = page.find("/GPU-hour (yours)", at)) != std::string::npos; ++at) ++yours;
    EXPECT_EQ(illustrative, 2u);  // the two dgx-a100 rows
    EXPECT_EQ(yours, 4u);         // the two dgx-h100 rows, the fastest and the cheapest lines
    EXPECT_NE(page.find("--price GPU=USD/h"), std::string::npos);
  }
  EXPECT_NE(md.find("| time to train | price | cost | per M tokens |\n|---|---|---|---|---|---|---|---|---|---|---|\n"),
            std::string::npos)
      << md;
}

TEST(SweepNewcomer, PricesAreReadByProfileOrGpuAnyCase) {
  const std::vector<std::string> clusters{"dgx-a100", "dgx-h100"};
  EXPECT_EQ(parse_prices("dgx-h100=2.5", clusters), (std::map<std::string, double>{{"dgx-h100", 2.5}}));
  EXPECT_EQ(parse_prices("a100-sxm4-80gb=1.25,DGX-H100=3", clusters),
            (std::map<std::string, double>{{"dgx-a100", 1.25}, {"dgx-h100", 3}}));
  const auto error = [&](const std::string& text) {
    try {
      parse_prices(text, clusters);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("dgx-b200=5"), "--price dgx-b200=5: 'dgx-b200' is none of the swept clusters or their GPUs: "
                                 "dgx-a100 (A100-SXM4-80GB), dgx-h100 (H100-SXM5-80GB)");
  EXPECT_EQ(error("dgx-h100=free"), "--price dgx-h100=free: 'free' is not a positive price in USD per GPU-hour");
  EXPECT_EQ(error("dgx-h100=-1"), "--price dgx-h100=-1: '-1' is not a positive price in USD per GPU-hour");
  EXPECT_EQ(error("2.5"), "--price: expected GPU=USD/h (e.g. dgx-h100=2.5 or H100-SXM5-80GB=2.5), got '2.5'");
}

// A sweep given a price costs its points at it, and the results file keeps it through merge.
TEST(SweepNewcomer, AGivenPriceCostsThePointsAndSurvivesTheFiles) {
  SweepOptions o;
  o.model = symtensor::testing::tiny_gpt_path();
  o.bind = "batch=16,seq=32";
  o.clusters = {"dgx-a100", "dgx-h100"};
  o.gpus = {4};
  o.strategies = {"dp"};
  o.prices = parse_prices("dgx-a100=0.5", o.clusters);
  const SweepResults r = run_sweep(o);
  ASSERT_EQ(r.points.size(), 2u);
  for (const auto& p : r.points) ASSERT_TRUE(p.ok) << p.cluster << ": " << p.error;
  EXPECT_EQ(r.points[0].price_per_gpu_hour, 0.5);
  EXPECT_EQ(r.points[0].cost_usd, 4 * r.points[0].time_to_train_s / 3600.0 * 0.5);
  EXPECT_EQ(r.points[1].price_per_gpu_hour, hardware::load_cluster("dgx-h100").price_per_gpu_hour.value());
  const SweepResults back = sweep_from_json(sweep_json(r), "results.json");
  EXPECT_EQ(back.prices_given, r.prices_given);
  EXPECT_EQ(describe_price(back, back.points[0]), "$0.50/GPU-hour (yours)");
  EXPECT_EQ(describe_price(back, back.points[1]), "$4.00/GPU-hour (illustrative)");
}

// Two clusters at the same cost per million tokens draw one line over the other (#34): the
// second is dashed, with its own marker shape, and the legend says whose line it lies on.
TEST(LineChart, EqualSeriesStayVisibleAndAreNamed) {
  const std::vector<std::pair<double, double>> same{{8, 2.0}, {64, 1.5}};
  const std::string svg = line_chart({{"dgx-a100", same}, {"hgx-a100", same}, {"dgx-h100", {{8, 1.0}, {64, 0.9}}}}, "GPUs",
                                     "cost per million tokens (USD)", "cost");
  const std::regex line(R"re(<polyline fill="none" stroke="(#[0-9A-F]+)" stroke-width="2.0"( stroke-dasharray="([0-9,]+)")? points=)re");
  std::vector<std::string> strokes;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), line); it != std::sregex_iterator(); ++it)
    strokes.push_back((*it)[1].str() + " " + (*it)[3].str());
  EXPECT_EQ(strokes, (std::vector<std::string>{"#0072B2 ", "#E69F00 7,4", "#009E73 2,3"})) << svg;
  EXPECT_NE(svg.find(">hgx-a100 (same as dgx-a100)</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">dgx-a100</text>"), std::string::npos);
  EXPECT_NE(svg.find(">dgx-h100</text>"), std::string::npos);  // not on another's line
  // Each series' points in its own shape: circles, squares, diamonds, two points each.
  const auto points = [&](const std::string& element) {
    const std::regex re(element);
    return std::distance(std::sregex_iterator(svg.begin(), svg.end(), re), std::sregex_iterator());
  };
  EXPECT_EQ(points(R"(<circle [^>]*class="point")"), 2);
  EXPECT_EQ(points(R"(<rect [^>]*class="point")"), 2);
  EXPECT_EQ(points(R"(<path d="M[^"]*" class="point")"), 2);
}

// The sweep page itself (#34's case): dgx-a100 and hgx-a100, the same GPU at the same price,
// cost the same per million tokens at every size; the page's cost chart draws the second
// dashed over the first and names it in the legend. Their throughput lines are equal too.
TEST(SweepNewcomer, EqualCostClustersStayVisibleOnThePage) {
  SweepResults r;
  r.model = "m.onnx";
  r.tokens = 1e9;
  r.tokens_per_sample = 1000;
  r.clusters = {"dgx-a100", "hgx-a100", "dgx-h100"};
  r.gpus = {8, 64};
  r.points = {priced_point("dgx-a100", 8, 2e4, 2.0), priced_point("dgx-a100", 64, 1.2e5, 2.0),
              priced_point("hgx-a100", 8, 2e4, 2.0), priced_point("hgx-a100", 64, 1.2e5, 2.0),
              priced_point("dgx-h100", 8, 5e4, 2.5), priced_point("dgx-h100", 64, 3.5e5, 2.5)};
  ASSERT_EQ(r.points[0].cost_per_million_tokens, r.points[2].cost_per_million_tokens);
  const std::string html = sweep_html(r);
  const std::size_t cost = html.find("<h2>Cost per million tokens</h2>");
  ASSERT_NE(cost, std::string::npos) << html;
  for (const std::string& chart : {html.substr(0, cost), html.substr(cost)}) {
    EXPECT_NE(chart.find(">hgx-a100 (same as dgx-a100)</text>"), std::string::npos) << chart;
    EXPECT_NE(chart.find(R"(stroke-dasharray="7,4" points=)"), std::string::npos) << chart;
    EXPECT_EQ(chart.find(">dgx-h100 (same as"), std::string::npos) << chart;
  }
}

// The rotated y-axis title ends left of the widest tick label, at every size of number.
TEST(LineChart, YTitleClearsTheTickLabels) {
  for (double ymax : {0.5, 80.0, 4.2e5, 1.234e6, 3.3e9}) {
    const std::string svg =
        line_chart({{"a", {{8, ymax / 3}, {64, ymax}}}}, "GPUs", "throughput (tokens/s)", "scaling");
    const std::regex title(R"re(<text x="([0-9.]+)" y="[0-9.]+" font-size="12(?:\.0)?" text-anchor="middle" fill="#222" transform="rotate\(-90)re");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(svg, m, title)) << svg;
    const double title_x = std::stod(m[1]);
    const std::regex tick(R"re(<text x="([0-9.]+)" y="[0-9.]+" font-size="11(?:\.0)?" text-anchor="end" fill="#444">([^<]*)</text>)re");
    int ticks = 0;
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), tick); it != std::sregex_iterator(); ++it, ++ticks) {
      const double right = std::stod((*it)[1]);
      const std::string label = (*it)[2];
      // The title's descent reaches 3 px right of its x; each label starts 0.6 em per character left of its end.
      EXPECT_LT(title_x + 3, right - 0.6 * 11 * label.size()) << "ymax " << ymax << ": tick '" << label << "'";
    }
    EXPECT_GE(ticks, 3);
    EXPECT_GE(title_x, 9);  // inside the canvas
  }
}

}  // namespace
}  // namespace symtensor::compiler
