#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "simulator/engine/simulator.h"
#include "simulator/program/synthetic.h"
#include "simulator/stats/chrome_trace.h"
#include "simulator/stats/result_json.h"
#include "sim_test_util.h"
#include "tests/temp_path.h"

namespace symtensor::sim {
namespace {

using nlohmann::json;

Program two_stage_program() {
  SyntheticConfig cfg;
  cfg.tp = 2;
  cfg.pp = 2;
  cfg.gpus_per_node = 2;
  cfg.micro_batches = 2;
  cfg.layers = 2;
  cfg.tp_allreduce_bytes = 1e6;
  cfg.p2p_bytes = 1e6;
  cfg.layer_activation_bytes = 1e8;
  return synthetic_pipeline_program(cfg);
}

TEST(ChromeTrace, OneProcessPerClassOneThreadPerStreamXEventsInMicroseconds) {
  Program p = two_stage_program();
  SimResult r = simulate(p, testing::test_cluster(2));
  auto path = symtensor::testing::temp_path("symtensor_sim_trace.json");
  write_chrome_trace(p, r, path);
  json trace = json::parse(std::ifstream(path));
  std::remove(path.c_str());
  std::set<int> pids;
  std::set<std::string> process_names, thread_names;
  int x_events = 0;
  double last_end_us = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") process_names.insert(e["args"]["name"]);
    if (e["ph"] == "M" && e["name"] == "thread_name") thread_names.insert(e["args"]["name"]);
    if (e["ph"] != "X") continue;
    ++x_events;
    pids.insert(e["pid"].get<int>());
    ASSERT_TRUE(e.contains("name") && e.contains("cat") && e.contains("ts") && e.contains("dur") && e.contains("tid"));
    EXPECT_GE(e["dur"].get<double>(), 0);
    last_end_us = std::max(last_end_us, e["ts"].get<double>() + e["dur"].get<double>());
  }
  EXPECT_EQ(process_names, (std::set<std::string>{"stage0", "stage1"}));
  EXPECT_TRUE(thread_names.count("compute") && thread_names.count("comm_tp") && thread_names.count("p2p_send"));
  EXPECT_EQ(pids.size(), 2u);
  // Every task but alloc/free is a slice: stage tasks minus 2 allocs and 2 frees each.
  size_t expected = p.rank_classes[0].tasks.size() + p.rank_classes[1].tasks.size() - 8;
  EXPECT_EQ(x_events, static_cast<int>(expected));
  EXPECT_NEAR(last_end_us, r.step_time_s * 1e6, 1e-6);
}

TEST(ResultJson, CarriesStepTimeAndPerClassNumbers) {
  Program p = two_stage_program();
  SimResult r = simulate(p, testing::test_cluster(2), {SimMode::full});
  json j = result_to_json(r);
  EXPECT_EQ(j["mode"], "full");
  EXPECT_DOUBLE_EQ(j["step_time_s"].get<double>(), r.step_time_s);
  ASSERT_EQ(j["rank_classes"].size(), 2u);
  EXPECT_EQ(j["rank_classes"][1]["name"], "stage1");
  EXPECT_DOUBLE_EQ(j["rank_classes"][0]["peak_memory_bytes"].get<double>(), 2e8);  // 1F1B stage 0 holds 2 micro-batches x 1 layer x 1e8 B
}

}  // namespace
}  // namespace symtensor::sim
