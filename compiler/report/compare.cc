#include "compiler/report/compare.h"

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "compiler/cost/numeric_graph.h"
#include "compiler/cost/step_bound.h"
#include "compiler/lowering/lower_plan.h"
#include "compiler/lowering/simulate_plan.h"
#include "compiler/onnx_import/import.h"
#include "compiler/report/compare_fleet.h"
#include "compiler/report/evaluate.h"
#include "compiler/report/mimo.h"
#include "compiler/report/plan_versus.h"
#include "compiler/base/units.h"
#include "simulator/engine/simulator.h"

namespace symtensor::compiler {
namespace {

void say(const CompareOptions& o, const std::string& line) {
  if (o.progress) o.progress(line);
}

}  // namespace

void check_compare_strategy(const std::string& name, const std::string& where, bool with_mimo) {
  std::vector<std::string> known = strategy_names();
  known.erase(std::remove(known.begin(), known.end(), "file"), known.end());
  if (with_mimo) known.insert(known.end(), {kMimoStrategy, kSymtensorMimoStrategy});
  if (std::find(known.begin(), known.end(), name) != known.end()) return;
  std::string list;
  for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
  throw std::runtime_error(where + ": unknown strategy '" + name + "' (known: " + list + ")");
}

bool compare_simulates(const CompareOptions& options, const hardware::Cluster& cluster) {
  return options.simulate || cluster.mixed();
}

CompareResults run_compare(const CompareOptions& options, const hardware::Cluster& cluster) {
  ImportOptions io;
  io.bindings = parse_bindings(options.bind);
  io.fusion = options.fusion;
  io.batch_dim = options.batch_dim;
  io.sequence_dim = options.sequence_dim;
  Graph graph = import_onnx_file(options.model, io);
  const NumericGraph numeric(graph);

  CompareResults r;
  r.model = options.model;
  r.cluster = cluster.name;
  r.devices = cluster.num_devices();
  r.device_memory_bytes = cluster.device.memory_bytes;
  r.device_kinds = device_kinds(cluster);
  r.bindings = graph.symbols.bindings();
  r.tokens_per_sample = bound_sequence_length(graph);
  r.palm = palm_flops(graph, numeric.spaces());

  // On a mixed fleet the bound of its uniform view (every rank at the slowest pace) bounds no
  // plan that places work by speed: the table goes without it.
  try {
    if (!cluster.mixed()) r.step_lower_bound_s = step_time_lower_bound(graph, cluster, StrategyOptions{});
  } catch (const std::exception&) {
    r.step_lower_bound_s = 0;  // no batch to spread: the table goes without the bound
  }

  std::vector<Timeline> timelines;
  std::vector<hardware::Cluster> row_clusters;  // what each row's plan runs on (a fleet's group, or the cluster)
  auto add_row = [&](StrategyResult&& s, Timeline&& timeline, const hardware::Cluster& on) {
    r.strategies.push_back(std::move(s));
    timelines.push_back(std::move(timeline));
    row_clusters.push_back(on);
  };
  std::optional<FleetSearchResult> fleet;       // the fleet search, on a mixed fleet, once for every row
  MimoSidePlans mimo_plans;                     // the MIMO rows' side plans, shared between them
  double fleet_search_s = 0;
  const bool simulate = compare_simulates(options, cluster);
  for (const std::string& name : options.strategies) {
    StrategyResult s;
    s.strategy = s.label = name;
    say(options, "compare: " + name + ": planning");
    StrategyOptions so = options.strategy;
    so.megatron = options.megatron;
    if (is_mimo_strategy(name)) {  // two groups of GPUs, two plans (compiler/report/mimo.h)
      try {
        s = mimo_strategy_result(graph, cluster, so, simulate, r.tokens_per_sample, name, &mimo_plans);
        say(options, "compare: " + s.label + ": " + format_seconds(s.step_time_s()) + " per step (" + s.evaluator() + ")");
      } catch (const std::exception& ex) {
        s.error = ex.what();
        say(options, "compare: " + name + ": no plan: " + s.error);
      }
      add_row(std::move(s), Timeline{}, cluster);
      continue;
    }
    std::optional<EvaluatedPlan> e;
    hardware::Cluster rc = cluster;
    try {
      if (cluster.mixed()) {
        FleetEvaluatedPlan f = evaluate_on_fleet(name, graph, cluster, so, fleet, fleet_search_s);
        e = std::move(f.plan);
        rc = std::move(f.cluster);
      } else {
        e = evaluate_strategy(name, graph, cluster, so);
      }
    } catch (const std::exception& ex) {
      s.error = ex.what();
      say(options, "compare: " + name + ": no plan: " + s.error);
      add_row(std::move(s), Timeline{}, cluster);
      continue;
    }
    const hardware::Cluster& cluster = rc;  // the row's own from here on
    s.ok = true;
    // The memory the plan must fit in on its own devices (the usable share: reserve and
    // headroom off; a fleet row's tightest stage's), as every row's fit is judged.
    s.memory_capacity_bytes = e->estimate.memory_capacity;
    s.label = e->label;
    s.search_time_s = e->search_time_s;
    s.estimate = e->estimate;
    s.estimate.mfu_6n = palm_mfu(r.palm, e->plan.mode == ExecutionMode::train, e->plan.precision, cluster, s.estimate.samples_per_s);
    s.plan = e->plan;
    s.memory = memory_breakdown(graph, e->plan, e->analysis);
    try {
      s.formula = build_step_formula(numeric, e->analysis, e->plan, cluster, e->estimate.stage_memory_capacity);
    } catch (const std::exception& ex) {
      s.simulation_error = std::string("formula: ") + ex.what();
    }
    s.explanation = explain_plan(numeric, e->analysis, e->plan, cluster);
    say(options, "compare: " + s.label + ": estimate " + format_seconds(s.estimate.step_time_s) + " per step");
    Timeline timeline;
    if (simulate) {
      try {
        sim::SimOptions sim_options;
        sim_options.record_trace = true;
        if (cluster.mixed()) {  // each stage timed on its own group's device (simulate_plan)
          const PlanSimulation p = simulate_plan(graph, e->plan, cluster, {}, sim_options);
          s.simulation = make_report(e->analysis, e->plan, cluster, p.result, r.tokens_per_sample, r.palm);
          timeline = build_timeline(p.program, p.result);
        } else {
          LoweringOptions lo;
          lo.graph = &graph;
          const sim::Program program = lower_plan(e->analysis, e->plan, cluster, plan_mesh(e->plan, cluster), lo);
          const sim::SimResult result = sim::simulate(program, cluster, sim_options);
          s.simulation = make_report(e->analysis, e->plan, cluster, result, r.tokens_per_sample, r.palm);
          timeline = build_timeline(program, result);
        }
        s.simulated = true;
        say(options, "compare: " + s.label + ": simulated " + format_seconds(s.simulation.step_time_s) + " per step");
      } catch (const std::exception& ex) {
        s.simulation_error = ex.what();
        say(options, "compare: " + s.label + ": not simulated: " + s.simulation_error);
      }
    }
    add_row(std::move(s), std::move(timeline), cluster);
  }
  if (fleet) r.fleet = describe_fleet_result(*fleet, cluster);

  for (std::size_t i = 0; i < r.strategies.size(); ++i) {
    const StrategyResult& s = r.strategies[i];
    if (!s.ok || !s.fits()) continue;
    if (r.chosen < 0 || s.step_time_s() < r.strategies[r.chosen].step_time_s()) r.chosen = static_cast<int>(i);
  }
  if (r.chosen >= 0) r.timeline = std::move(timelines[r.chosen]);
  if (r.chosen >= 0) r.why_chosen = why_chosen(r, graph, row_clusters[r.chosen], numeric.num_layers());

  std::vector<std::pair<std::string, const StepFormula*>> formulas;
  for (const auto& s : r.strategies)
    if (s.ok && s.formula) formulas.emplace_back(s.label, &*s.formula);
  r.break_evens = break_even_points(formulas);
  return r;
}

}  // namespace symtensor::compiler
