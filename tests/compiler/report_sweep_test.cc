// The sweep: each point is the fastest fitting plan of its strategies, priced exactly as
// evaluate_strategy prices it, and worker processes change nothing (points come back
// through a pipe as text: every number must survive the trip bit for bit).
#include <gtest/gtest.h>

#include "compiler/onnx_import/import.h"
#include "compiler/report/evaluate.h"
#include "compiler/report/process_pool.h"
#include "compiler/report/report_files.h"
#include "compiler/report/sweep.h"
#include "compiler/report/sweep_merge.h"
#include "tests/compiler/report_test_util.h"

namespace symtensor::compiler {
namespace {

SweepOptions tiny_sweep(int jobs) {
  SweepOptions o;
  o.model = symtensor::testing::tiny_gpt_path();
  o.bind = "batch=16,seq=32";
  o.clusters = {"dgx-a100", "dgx-h100"};
  o.gpus = {2, 4, 8};
  o.strategies = {"symtensor", "dp"};
  o.jobs = jobs;
  return o;
}

void expect_same_point(const SweepPoint& a, const SweepPoint& b) {
  EXPECT_EQ(a.cluster, b.cluster);
  EXPECT_EQ(a.gpus, b.gpus);
  EXPECT_EQ(a.ok, b.ok);
  EXPECT_EQ(a.error, b.error);
  EXPECT_EQ(a.strategy, b.strategy);
  EXPECT_EQ(a.step_time_s, b.step_time_s);
  EXPECT_EQ(a.samples_per_s, b.samples_per_s);
  EXPECT_EQ(a.tokens_per_s, b.tokens_per_s);
  EXPECT_EQ(a.mfu, b.mfu);
  EXPECT_EQ(a.mfu_6n, b.mfu_6n);
  EXPECT_EQ(a.peak_memory_bytes, b.peak_memory_bytes);
  EXPECT_EQ(a.memory_capacity_bytes, b.memory_capacity_bytes);
  EXPECT_EQ(a.time_to_train_s, b.time_to_train_s);
  EXPECT_EQ(a.cost_usd, b.cost_usd);
  EXPECT_EQ(a.cost_per_million_tokens, b.cost_per_million_tokens);
  EXPECT_EQ(a.rejected, b.rejected);
  ASSERT_EQ(a.memory.size(), b.memory.size());
  for (std::size_t k = 0; k < a.memory.size(); ++k) {
    EXPECT_EQ(a.memory[k].stage, b.memory[k].stage);
    EXPECT_EQ(a.memory[k].parameters, b.memory[k].parameters);
    EXPECT_EQ(a.memory[k].activations, b.memory[k].activations);
    EXPECT_EQ(a.memory[k].activations_by_class, b.memory[k].activations_by_class);
    EXPECT_EQ(a.memory[k].working_buffers_detail, b.memory[k].working_buffers_detail);
    EXPECT_EQ(a.memory[k].transient, b.memory[k].transient);
    EXPECT_EQ(a.memory[k].reserve, b.memory[k].reserve);
    EXPECT_EQ(a.memory[k].peak, b.memory[k].peak);
  }
}

TEST(Sweep, WorkersGiveTheSamePointsInTheSameOrder) {
  const SweepResults one = run_sweep(tiny_sweep(1));
  const SweepResults three = run_sweep(tiny_sweep(3));
  ASSERT_EQ(one.points.size(), 6u);
  ASSERT_EQ(three.points.size(), 6u);
  for (std::size_t i = 0; i < one.points.size(); ++i) {
    SCOPED_TRACE(one.points[i].cluster + " x" + std::to_string(one.points[i].gpus));
    EXPECT_TRUE(one.points[i].ok) << one.points[i].error;
    expect_same_point(one.points[i], three.points[i]);
  }
  EXPECT_EQ(one.points[0].cluster, "dgx-a100");
  EXPECT_EQ(one.points[0].gpus, 2);
  EXPECT_EQ(one.points[5].cluster, "dgx-h100");
  EXPECT_EQ(one.points[5].gpus, 8);
}

TEST(Sweep, APointIsTheFastestStrategyAsEvaluatedAlone) {
  const SweepResults r = run_sweep(tiny_sweep(2));
  ImportOptions io;
  io.bindings = parse_bindings("batch=16,seq=32");
  Graph graph = import_onnx_file(symtensor::testing::tiny_gpt_path(), io);
  const PalmFlops palm = palm_flops(graph);
  ASSERT_TRUE(palm.applies()) << palm.not_applicable;
  for (const SweepPoint& p : r.points) {
    SCOPED_TRACE(p.cluster + " x" + std::to_string(p.gpus));
    const hardware::Cluster cluster = cluster_of_size(p.cluster, p.gpus);
    const EvaluatedPlan sym = evaluate_strategy("symtensor", graph, cluster, StrategyOptions{});
    const EvaluatedPlan dp = evaluate_strategy("dp", graph, cluster, StrategyOptions{});
    const EvaluatedPlan& best = dp.estimate.step_time_s < sym.estimate.step_time_s ? dp : sym;
    ASSERT_TRUE(p.ok);
    EXPECT_EQ(p.strategy, best.label);
    EXPECT_EQ(p.step_time_s, best.estimate.step_time_s);
    EXPECT_EQ(p.peak_memory_bytes, best.estimate.peak_memory);
    // The point carries the chosen plan's memory part by part; its fullest stage is the peak.
    const auto expected = memory_breakdown(graph, best.plan, best.analysis);
    ASSERT_EQ(p.memory.size(), expected.size());
    ASSERT_NE(fullest_stage(p.memory), nullptr);
    EXPECT_DOUBLE_EQ(fullest_stage(p.memory)->peak, p.peak_memory_bytes);
    for (std::size_t k = 0; k < expected.size(); ++k) EXPECT_DOUBLE_EQ(p.memory[k].peak, expected[k].peak);
    EXPECT_DOUBLE_EQ(p.tokens_per_s, best.estimate.samples_per_s * 32);
    EXPECT_EQ(p.mfu_6n, palm_mfu(palm, best.plan.mode == ExecutionMode::train, best.plan.precision, cluster, best.estimate.samples_per_s));
    EXPECT_DOUBLE_EQ(p.time_to_train_s, 1e12 / p.tokens_per_s);
    EXPECT_DOUBLE_EQ(p.cost_usd, p.gpus * p.time_to_train_s / 3600 * p.price_per_gpu_hour);
  }
}

// Every sweep file names both MFUs; results.json read back (as `merge` reads it) keeps the
// 6N + 12Lhs value and its terms.
TEST(Sweep, FilesAndMergeKeepBothMfus) {
  SweepOptions o = tiny_sweep(1);
  o.clusters = {"dgx-a100"};
  o.gpus = {2};
  const SweepResults r = run_sweep(o);
  ASSERT_EQ(r.points.size(), 1u);
  ASSERT_TRUE(r.points[0].ok) << r.points[0].error;
  ASSERT_TRUE(r.points[0].mfu_6n);
  const std::string label = palm_mfu_label(r.palm);
  for (const std::string& text : {sweep_markdown(r), sweep_html(r)}) {
    EXPECT_NE(text.find(kExactMfuLabel), std::string::npos);
    EXPECT_NE(text.find(label), std::string::npos);
  }
  EXPECT_NE(sweep_csv(r).find(",mfu,mfu_6n,"), std::string::npos);
  const SweepResults back = sweep_from_json(sweep_json(r), "results.json");
  EXPECT_EQ(back.points[0].mfu_6n, r.points[0].mfu_6n);
  EXPECT_EQ(back.palm.per_token, r.palm.per_token);
  EXPECT_EQ(back.palm.parameters, r.palm.parameters);
}

TEST(ProcessPool, EveryPieceIsAnsweredOnceAndFailuresSayWhich) {
  std::vector<std::size_t> order{4, 3, 2, 1, 0};
  std::vector<std::string> answers(5);
  std::vector<std::string> failures(5);
  run_in_workers(
      order, 2,
      [](std::size_t i) -> std::string {
        if (i == 3) throw std::runtime_error("piece three\nfailed");
        return std::to_string(i * i);
      },
      [&](std::size_t i, const std::string& a) { answers[i] += a; },
      [&](std::size_t i, const std::string& e) { failures[i] += e; });
  EXPECT_EQ(answers, (std::vector<std::string>{"0", "1", "4", "", "16"}));
  EXPECT_EQ(failures[3], "piece three failed");
  for (std::size_t i : {0, 1, 2, 4}) EXPECT_EQ(failures[i], "");
}

TEST(ProcessPool, AWorkerThatDiesIsAnError) {
  EXPECT_THROW(run_in_workers(
                   {0, 1, 2}, 2,
                   [](std::size_t i) -> std::string {
                     if (i == 1) ::_exit(3);
                     return "fine";
                   },
                   [](std::size_t, const std::string&) {}, [](std::size_t, const std::string&) {}),
               std::runtime_error);
}

}  // namespace
}  // namespace symtensor::compiler
