// sweep --serve (compiler/report/serve_sweep.h, issue #33): Llama-3-70B in FP8 at 2 requests/s
// of 1000 -> 200 tokens under TTFT <= 1 s, TPOT <= 50 ms on one node each of DGX H100 (the
// profile's illustrative $4.00/GPU-hour), HGX H200 (--price 3.0, marked yours) and PCIe L4
// (whose 24 GB GPUs without NVLink meet no layout: said on its row). The cost per million
// output tokens of a row recomputed by hand from its GPUs, price and simulated throughput.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "compiler/report/serve_sweep.h"
#include "tests/compiler/serve_test_util.h"
#include "tests/temp_path.h"

namespace symtensor::compiler {
namespace {

const ServeSweepResults& serve_sweep_of_three() {
  static const ServeSweepResults r = [] {
    ServeSweepOptions o;
    o.clusters = {"dgx-h100", "hgx-h200", "pcie-l4"};
    o.nodes = 1;
    o.prices = {{"hgx-h200", 3.0}};
    o.precision = ServingPrecision{hardware::Precision::fp8, hardware::Precision::fp8};
    o.search.rate = 2;
    o.search.input_tokens = 1000;
    o.search.output_tokens = 200;
    o.search.slo = sim::ServingSlo{1.0, 0.05};
    return run_serve_sweep(testing::serving_model_of("llama3-70b"), o);
  }();
  return r;
}

std::string read_serve_sweep_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ServeSweep, CostPerMillionOutputTokensByHand) {
  const ServeSweepResults& r = serve_sweep_of_three();
  std::printf("%s", serve_sweep_text(r).c_str());
  ASSERT_EQ(r.rows.size(), 3u);
  const ServeSweepRow& h100 = r.rows[0];
  ASSERT_TRUE(h100.ok) << h100.error;
  EXPECT_EQ(h100.cluster_gpus, 8);
  EXPECT_DOUBLE_EQ(h100.price_per_gpu_hour, 4.0);  // dgx-h100.yaml's illustrative price
  EXPECT_FALSE(h100.price_given);
  // 2 requests/s of 200 output tokens: about 400 output tokens/s once the queue is steady.
  EXPECT_NEAR(h100.answer.output_tokens_per_s, 400, 60);
  // By hand: GPUs x $/GPU-hour / (tokens/s x 3600 / 1e6).
  const double by_hand = h100.answer.gpus * 4.0 / (h100.answer.output_tokens_per_s * 3600 / 1e6);
  EXPECT_NEAR(h100.cost_per_million_output_tokens, by_hand, 1e-9 * by_hand);
  EXPECT_DOUBLE_EQ(h100.output_tokens_per_hour, h100.answer.output_tokens_per_s * 3600);
  EXPECT_DOUBLE_EQ(h100.cost_per_hour, h100.answer.gpus * 4.0);
  // E.g. 2 GPUs at $4.00 for 400 tokens/s: $8.00 / 1.44 M tokens = $5.56.
  EXPECT_GT(h100.cost_per_million_output_tokens, 1.0);
  EXPECT_LT(h100.cost_per_million_output_tokens, 60.0);

  const ServeSweepRow& h200 = r.rows[1];
  ASSERT_TRUE(h200.ok) << h200.error;
  EXPECT_DOUBLE_EQ(h200.price_per_gpu_hour, 3.0);
  EXPECT_TRUE(h200.price_given);
  EXPECT_NEAR(h200.cost_per_million_output_tokens, h200.answer.gpus * 3.0 / (h200.answer.output_tokens_per_s * 3600 / 1e6),
              1e-9 * h200.cost_per_million_output_tokens);
  EXPECT_LE(h200.answer.gpus, h100.answer.gpus);  // more memory per GPU never needs more of them

  const ServeSweepRow& l4 = r.rows[2];
  EXPECT_FALSE(l4.ok);
  EXPECT_NE(l4.error.find("no layout meets the SLOs"), std::string::npos) << l4.error;
  EXPECT_EQ(l4.cost_per_million_output_tokens, 0);
}

TEST(ServeSweep, ReportFilesCarryTheRows) {
  const ServeSweepResults& r = serve_sweep_of_three();
  const std::string dir = symtensor::testing::temp_path("serve_sweep_report");
  write_serve_sweep_report(r, dir);
  for (const char* f : {"results.csv", "results.json", "report.md", "report.html"})
    EXPECT_TRUE(std::filesystem::exists(dir + "/" + f)) << f;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
  const nlohmann::json j = nlohmann::json::parse(read_serve_sweep_file(dir + "/results.json"));
  ASSERT_EQ(j.at("rows").size(), 3u);
  const nlohmann::json& h100 = j.at("rows").at(0);
  EXPECT_EQ(h100.at("price_source"), "illustrative");
  EXPECT_EQ(j.at("rows").at(1).at("price_source"), "yours");
  EXPECT_DOUBLE_EQ(h100.at("cost_per_million_output_tokens").get<double>(),
                   h100.at("gpus").get<double>() * h100.at("price_per_gpu_hour").get<double>() /
                       (h100.at("output_tokens_per_s").get<double>() * 3600 / 1e6));
  EXPECT_FALSE(j.at("rows").at(2).at("ok").get<bool>());
  const std::string csv = read_serve_sweep_file(dir + "/results.csv");
  EXPECT_NE(csv.find("pcie-l4,"), std::string::npos);
  EXPECT_NE(csv.find("no layout meets the SLOs"), std::string::npos);
  const std::string md = read_serve_sweep_file(dir + "/report.md");
  EXPECT_NE(md.find("(illustrative)"), std::string::npos);
  EXPECT_NE(md.find("(yours)"), std::string::npos);
  EXPECT_NE(md.find("**Cheapest: "), std::string::npos);
}

}  // namespace
}  // namespace symtensor::compiler
