#pragma once
// Hand-built plans and analyses for the lowering tests (no graph or plan generator needed).
#include <optional>

#include "compiler/cost/plan_analysis.h"
#include "compiler/lowering/lower_plan.h"
#include "hardware/cluster.h"
#include "hardware/collectives.h"
#include "simulator/engine/simulator.h"
#include "simulator/program/task_factory.h"

namespace symtensor::compiler::lowering_fixtures {

struct Toy {
  hardware::Cluster cluster;
  Plan plan;
  hardware::DeviceMesh mesh;
  PlanAnalysis analysis;
};

// dgx-a100 with `nodes` nodes; mesh {{nodes}, gpu_factors}; pipeline on axis `pp_axis` (-1: none).
inline Toy toy(int nodes, std::vector<std::vector<int>> factors, int pp_axis, int micro_batches,
               Schedule schedule = Schedule::one_f_one_b, int virtual_stages = 1) {
  Toy t{hardware::scale_cluster(hardware::load_cluster("dgx-a100"), nodes, std::nullopt), {}, {}, {}};
  t.plan.strategy = "test";
  t.plan.precision = hardware::Precision::fp16;
  t.plan.mesh_factors = std::move(factors);
  t.plan.pipeline_axis = pp_axis;
  t.plan.micro_batches = micro_batches;
  t.plan.global_batch = micro_batches;
  t.plan.schedule = schedule;
  t.plan.virtual_stages = virtual_stages;
  t.mesh = plan_mesh(t.plan, t.cluster);
  t.analysis.device_memory = t.cluster.device.memory_bytes;
  return t;
}

// One operator with fixed forward/backward seconds on `stage`.
inline OpWork op(int stage, double fwd_s, double bwd_s, double flops = 1e12) {
  OpWork w;
  w.node = 0;
  w.stage = stage;
  w.fwd_flops = flops;
  w.bwd_flops = 2 * flops;
  w.fwd_seconds = fwd_s;
  w.bwd_seconds = bwd_s;
  return w;
}

inline CommOp comm(const Toy& t, hardware::Collective kind, std::vector<int> axes, double bytes) {
  CommOp c;
  c.kind = kind;
  c.axes = axes;
  c.group = t.mesh.group_shape(axes);
  c.bytes = bytes;
  c.seconds = hardware::collective_time(t.cluster, kind, c.group, bytes).seconds;
  return c;
}

inline sim::SimResult run(const Toy& t, sim::SimMode mode = sim::SimMode::symmetric, const LoweringOptions& o = {}) {
  sim::SimOptions so;
  so.mode = mode;
  so.record_trace = false;
  return sim::simulate(lower_plan(t.analysis, t.plan, t.cluster, t.mesh, o), t.cluster, so);
}

// The simulator's time for one collective alone on the toy's mesh: the yardstick for the
// lowering's composition (the simulator's collectives are tested against the analytic model
// in tests/simulator).
inline double isolated_collective_seconds(const Toy& t, hardware::Collective kind, std::vector<int> axes, double bytes) {
  sim::Program p;
  p.mesh = t.mesh.axes();
  sim::RankClass rc;
  rc.name = "all";
  for (int r = 0; r < t.mesh.num_devices(); ++r) rc.ranks.push_back(r);
  std::vector<std::string> group;
  for (int a : axes) group.push_back(t.mesh.axes()[a].name);
  rc.tasks.push_back(sim::collective_task("c", "comm", kind, bytes, group));
  p.rank_classes.push_back(rc);
  sim::SimOptions so;
  so.record_trace = false;
  return sim::simulate(p, t.cluster, so).step_time_s;
}

}  // namespace symtensor::compiler::lowering_fixtures
