// Lowering of hand-built plan analyses: step times against hand arithmetic, schedules'
// bubbles, tensor-parallel collectives on the critical path, gradient buckets, memory.
#include <gtest/gtest.h>

#include "compiler/lowering/simulation_report.h"
#include "lowering_test_util.h"

namespace symtensor::compiler {
namespace {

using hardware::Collective;
using lowering_fixtures::comm;
using lowering_fixtures::op;
using lowering_fixtures::run;
using lowering_fixtures::toy;

int count_kind(const sim::Program& p, sim::TaskKind kind, const std::string& stream = "") {
  int n = 0;
  for (const auto& rc : p.rank_classes)
    for (const auto& t : rc.tasks) n += t.kind == kind && (stream.empty() || t.stream == stream);
  return n;
}

TEST(LoweringProgram, SingleStageIsMicroBatchesTimesForwardPlusBackward) {
  auto t = toy(1, {{1}, {8}}, -1, 4);
  t.analysis.ops = {op(0, 0.010, 0.020), op(0, 0.005, 0.010)};
  t.analysis.optimizer_seconds_per_stage = 0.003;
  // 4 x (10 + 5 + 20 + 10) ms + 3 ms optimizer = 183 ms.
  EXPECT_NEAR(run(t).step_time_s, 0.183, 1e-9);
  const sim::Program p = lower_plan(t.analysis, t.plan, t.cluster, t.mesh);
  ASSERT_EQ(p.rank_classes.size(), 1u);
  EXPECT_EQ(p.rank_classes[0].ranks.size(), 8u);
  // Consecutive operators merge: one forward and one backward block per micro-batch + optimizer.
  EXPECT_EQ(count_kind(p, sim::TaskKind::compute), 8);
  EXPECT_EQ(count_kind(p, sim::TaskKind::optimizer), 1);
}

// 4 stages on the 8 GPUs of a node (gpu level factored 4 x 2, pipeline on axis 1), tf = 1 ms, tb = 2 ms
// per stage, no p2p bytes.
lowering_fixtures::Toy four_stages(Schedule schedule, int m, int v = 1) {
  auto t = toy(1, {{1}, {4, 2}}, 1, m, schedule, v);
  for (int s = 0; s < 4 * v; ++s) t.analysis.ops.push_back(op(s, 0.001 / v, 0.002 / v));
  return t;
}

TEST(LoweringProgram, OneFOneBAndGPipeBubbleIsStagesMinusOne) {
  // (m + p - 1)(tf + tb) = (8 + 3) x 3 ms = 33 ms; p2p latency adds ~µs per hop.
  EXPECT_NEAR(run(four_stages(Schedule::one_f_one_b, 8)).step_time_s, 0.033, 0.033 * 0.01);
  EXPECT_NEAR(run(four_stages(Schedule::gpipe, 8)).step_time_s, 0.033, 0.033 * 0.01);
}

TEST(LoweringProgram, InterleavingDividesTheBubbleByChunks) {
  // Bubble (p - 1)(tf + tb)/v: 8 x 3 ms + 3 x 3 ms / 2 = 28.5 ms.
  auto t = four_stages(Schedule::interleaved_1f1b, 8, 2);
  const sim::SimResult r = run(t);
  EXPECT_NEAR(r.step_time_s, 0.0285, 0.0285 * 0.01);
  // Stage numbering by virtual stage: chunk 1 of stage 0 is virtual stage 4; each device does 8 x 2 units.
  const sim::Program p = lower_plan(t.analysis, t.plan, t.cluster, t.mesh);
  EXPECT_EQ(count_kind(p, sim::TaskKind::send), 2 * (4 * 2 - 1) * 8);
}

TEST(LoweringProgram, StagesGivenPerDeviceAreSplitIntoChunks) {
  auto t = toy(1, {{1}, {4, 2}}, 1, 8, Schedule::interleaved_1f1b, 2);
  for (int s = 0; s < 4; ++s) {
    t.analysis.ops.push_back(op(s, 0.0005, 0.001));
    t.analysis.ops.push_back(op(s, 0.0005, 0.001));
  }
  EXPECT_NEAR(run(t).step_time_s, 0.0285, 0.0285 * 0.01);
}

TEST(LoweringProgram, TensorParallelAllReducesAreOnTheCriticalPath) {
  auto t = toy(1, {{1}, {8}}, -1, 2);
  OpWork w = op(0, 0.004, 0.008);
  const double S = 2.0 * 2048 * 4096 * 2;  // b·s·h fp16 elements, b = 2
  w.fwd_comm = {comm(t, Collective::all_reduce, {1}, S)};
  w.bwd_comm = {comm(t, Collective::all_reduce, {1}, S)};
  t.analysis.ops = {w};
  const double ar = lowering_fixtures::isolated_collective_seconds(t, Collective::all_reduce, {1}, S);
  const sim::SimResult r = run(t);
  // 2 micro-batches x (4 + 8 ms) + the all-reduces (the optimizer has no parameters: no work, no
  // launch); the first
  // micro-batch's backward all-reduce (of the model input's gradient: nothing consumes it) overlaps
  // the second forward, the other three are serial.
  EXPECT_NEAR(r.step_time_s, 2 * 0.012 + 3 * ar, 1e-7);
  EXPECT_NEAR(r.classes[0].exposed_comm_s, 3 * ar, 1e-7);
}

TEST(LoweringProgram, GradientBucketsOverlapBackwardUnlessLocalDdp) {
  // 2 nodes x 8 GPUs, pure data parallel over both levels; 4 operators, each with a 100 MB gradient.
  auto t = toy(2, {{2}, {8}}, -1, 1);
  for (int i = 0; i < 4; ++i) {
    t.analysis.ops.push_back(op(0, 0.010, 0.020));
    t.analysis.ops.back().node = i;
    ParamWork p;
    p.stage = 0;
    p.grad_sync = {comm(t, Collective::all_reduce, {0, 1}, 100e6)};
    t.analysis.params.push_back(p);
  }
  LoweringOptions overlap, local;
  local.overlap_grad_sync = false;
  const double with = run(t, sim::SimMode::symmetric, overlap).step_time_s;
  const double without = run(t, sim::SimMode::symmetric, local).step_time_s;
  const double compute = 4 * 0.030;
  const double bucket = lowering_fixtures::isolated_collective_seconds(t, Collective::all_reduce, {0, 1}, 100e6);
  ASSERT_LT(bucket, 0.020);  // shorter than one operator's backward: hidden while it runs
  // Without overlap: compute then every bucket (25 MB cap: one per 100 MB parameter) back to back
  // (the fixture's parameters have no bytes: the optimizer task has no work and takes no time).
  EXPECT_NEAR(without, compute + 4 * bucket, 1e-6);
  // With overlap the first three buckets hide behind the remaining backward; the last one is exposed.
  EXPECT_NEAR(with, compute + bucket, 1e-6);
  const sim::Program p = lower_plan(t.analysis, t.plan, t.cluster, t.mesh);
  EXPECT_EQ(count_kind(p, sim::TaskKind::collective, "comm_dp"), 4);
}

TEST(LoweringProgram, ActivationPeakFollowsTheSchedule) {
  // Stage 0 of 4 holds p = 4 micro-batches under 1F1B and all m = 8 under GPipe.
  for (auto [schedule, held] : {std::pair{Schedule::one_f_one_b, 4}, std::pair{Schedule::gpipe, 8}}) {
    auto t = four_stages(schedule, 8);
    for (auto& o : t.analysis.ops) o.saved_bytes = 1e9;
    t.analysis.stage_memory.assign(4, StageMemory{});
    for (auto& m : t.analysis.stage_memory) m.parameters = 2e9, m.gradients = 2e9, m.optimizer = 12e9;
    const sim::SimResult r = run(t);
    EXPECT_DOUBLE_EQ(r.classes[0].peak_memory_bytes, 16e9 + held * 1e9) << to_string(schedule);
    const int last_held = schedule == Schedule::gpipe ? 8 : 1;  // GPipe: every stage holds all m
    EXPECT_DOUBLE_EQ(r.classes[3].peak_memory_bytes, 16e9 + last_held * 1e9) << to_string(schedule);
    EXPECT_FALSE(r.classes[0].out_of_memory);
  }
}

TEST(LoweringProgram, TransientBuffersAndTheReserveAreHeldAllStep) {
  // 16 GB of model states, 0.5 GB working buffers, 1.5 GB collective staging, a 2 GB
  // reserve: 20 GB before any activation; stage 0 then holds 4 micro-batches of 1 GB.
  auto t = four_stages(Schedule::one_f_one_b, 8);
  for (auto& o : t.analysis.ops) o.saved_bytes = 1e9;
  t.analysis.stage_memory.assign(4, StageMemory{});
  for (auto& m : t.analysis.stage_memory)
    m.parameters = 2e9, m.gradients = 2e9, m.optimizer = 12e9, m.working_buffers = 0.5e9, m.collective_buffers = 1.5e9,
    m.reserve = 2e9;
  const sim::SimResult r = run(t);
  EXPECT_DOUBLE_EQ(r.classes[0].static_memory_bytes, 20e9);
  EXPECT_DOUBLE_EQ(r.classes[0].peak_memory_bytes, 20e9 + 4 * 1e9);
  // The optimizer streams the model states only.
  const sim::Program p = lower_plan(t.analysis, t.plan, t.cluster, t.mesh);
  EXPECT_DOUBLE_EQ(p.rank_classes[0].static_memory.model_states(), 16e9);
}

TEST(LoweringProgram, OutOfMemoryIsReportedWithTheOverage) {
  auto t = four_stages(Schedule::gpipe, 8);
  for (auto& o : t.analysis.ops) o.saved_bytes = 11e9;  // every stage: 8 x 11 GB > 80 GB
  const sim::SimResult r = run(t);
  const SimulationReport rep = make_report(t.analysis, t.plan, t.cluster, r, 2048, PalmFlops{});
  EXPECT_FALSE(rep.fits);
  EXPECT_TRUE(rep.stages[0].out_of_memory);
  EXPECT_NEAR(rep.stages[0].overage_bytes, 88e9 - t.cluster.device.memory_bytes, 1);
}

TEST(LoweringProgram, RecomputeRunsTheForwardAgainAndCountsInHfuOnly) {
  auto t = toy(1, {{1}, {8}}, -1, 4);
  t.analysis.ops = {op(0, 0.010, 0.020, 1e12)};
  t.analysis.ops[0].recomputed = true;
  t.analysis.optimizer_seconds_per_stage = 0.001;
  const sim::SimResult r = run(t);
  EXPECT_NEAR(r.step_time_s, 4 * 0.040 + 0.001, 1e-9);  // 4 x (10 fwd + 10 recompute + 20 bwd) + 1 ms
  const SimulationReport rep = make_report(t.analysis, t.plan, t.cluster, r, 0, PalmFlops{});
  // Model FLOPs: 8 devices x 4 micro-batches x (1 + 2) TFLOP; hardware adds 8 x 4 x 1 TFLOP.
  EXPECT_DOUBLE_EQ(rep.model_flops, 8 * 4 * 3e12);
  EXPECT_DOUBLE_EQ(rep.hardware_flops, 8 * 4 * 4e12);
  EXPECT_NEAR(rep.mfu, 3e12 * 4 / (312e12 * 0.161), 1e-9);
  EXPECT_NEAR(rep.hfu / rep.mfu, 4.0 / 3.0, 1e-12);
}

TEST(LoweringProgram, ZeroThreeGathersParametersBeforeUse) {
  auto t = toy(2, {{2}, {8}}, -1, 2);
  for (int i = 0; i < 3; ++i) {
    t.analysis.ops.push_back(op(0, 0.010, 0.020));
    ParamWork p;
    p.grad_sync = {comm(t, Collective::reduce_scatter, {0, 1}, 50e6)};
    p.gather = {comm(t, Collective::all_gather, {0, 1}, 50e6)};
    t.analysis.params.push_back(p);
  }
  t.plan.zero_stage = 3;
  const sim::Program p = lower_plan(t.analysis, t.plan, t.cluster, t.mesh);
  // One gather per operator per pass (forward, backward) per micro-batch: 3 x 2 x 2.
  EXPECT_EQ(count_kind(p, sim::TaskKind::collective, "comm_zero"), 12);
  EXPECT_EQ(count_kind(p, sim::TaskKind::collective, "comm_dp"), 3);  // reduce-scatter buckets
  EXPECT_GT(run(t).step_time_s, 2 * 0.090);
}

// ZeRO-2/3 keep the gradients sharded: each micro-batch's backward reduce-scatters its own
// (CommOp::every_micro_batch), 3 buckets x 2 micro-batches; an all-reduce beside them (HSDP's
// replicas) still runs once, after the last.
TEST(LoweringProgram, ShardedGradientsAreReduceScatteredEveryMicroBatch) {
  auto t = toy(2, {{2}, {8}}, -1, 2);
  for (int i = 0; i < 3; ++i) {
    t.analysis.ops.push_back(op(0, 0.010, 0.020));
    ParamWork p;
    p.grad_sync = {comm(t, Collective::reduce_scatter, {1}, 50e6), comm(t, Collective::all_reduce, {0}, 5e6)};
    p.grad_sync[0].every_micro_batch = true;
    t.analysis.params.push_back(p);
  }
  t.plan.zero_stage = 2;
  const sim::Program once_a_step = [&] {
    auto u = t;
    for (ParamWork& p : u.analysis.params) p.grad_sync[0].every_micro_batch = false;
    return lower_plan(u.analysis, u.plan, u.cluster, u.mesh);
  }();
  EXPECT_EQ(count_kind(once_a_step, sim::TaskKind::collective, "comm_dp"), 3 * 2);
  const sim::Program p = lower_plan(t.analysis, t.plan, t.cluster, t.mesh);
  EXPECT_EQ(count_kind(p, sim::TaskKind::collective, "comm_dp"), 3 * 2 + 3);
  LoweringOptions no_overlap;
  no_overlap.overlap_grad_sync = false;
  EXPECT_EQ(count_kind(lower_plan(t.analysis, t.plan, t.cluster, t.mesh, no_overlap), sim::TaskKind::collective, "comm_dp"),
            3 * 2 + 3);
}

TEST(LoweringProgram, BadPlansAreRefusedInOneLine) {
  auto t = four_stages(Schedule::one_f_one_b, 8);
  t.analysis.ops[0].fwd_comm = {comm(t, Collective::all_reduce, {1}, 1e6)};  // over the pipeline axis
  EXPECT_THROW(lower_plan(t.analysis, t.plan, t.cluster, t.mesh), std::runtime_error);
  auto u = four_stages(Schedule::one_f_one_b, 8);
  u.analysis.ops.push_back(op(7, 0.001, 0.002));  // stage 7 of 4
  EXPECT_THROW(lower_plan(u.analysis, u.plan, u.cluster, u.mesh), std::runtime_error);
  auto v = four_stages(Schedule::interleaved_1f1b, 6, 2);  // 6 micro-batches, 4 stages
  EXPECT_THROW(lower_plan(v.analysis, v.plan, v.cluster, v.mesh), std::runtime_error);
}

}  // namespace
}  // namespace symtensor::compiler
