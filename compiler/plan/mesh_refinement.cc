#include "compiler/plan/mesh_refinement.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace symtensor::compiler {
namespace {

// The running products of a level's factors, major first: [4, 2] -> {4, 8}.
std::vector<long long> cut_points(const std::vector<int>& factors) {
  std::vector<long long> points;
  long long p = 1;
  for (int f : factors) points.push_back(p *= f);
  return points;
}

long long level_size(const std::vector<int>& factors) {
  return std::accumulate(factors.begin(), factors.end(), 1LL, std::multiplies<>());
}

}  // namespace

std::optional<MeshFactors> common_mesh_refinement(const MeshFactors& a, const MeshFactors& b) {
  if (a.size() != b.size()) return std::nullopt;
  MeshFactors out;
  for (std::size_t l = 0; l < a.size(); ++l) {
    if (level_size(a[l]) != level_size(b[l])) return std::nullopt;
    std::set<long long> points;
    for (long long p : cut_points(a[l])) points.insert(p);
    for (long long p : cut_points(b[l])) points.insert(p);
    std::vector<int> factors;
    long long last = 1;
    for (long long p : points) {
      if (p == last) continue;  // a factor of 1
      if (p % last != 0) return std::nullopt;
      factors.push_back(static_cast<int>(p / last));
      last = p;
    }
    if (factors.empty()) factors.push_back(1);
    out.push_back(std::move(factors));
  }
  return out;
}

Plan refine_plan_mesh(Plan plan, const MeshFactors& finer) {
  const MeshFactors& coarse = plan.mesh_factors;
  auto refuse = [&] {
    return std::runtime_error(
        fmt::format("mesh {} is not a refinement of the plan's mesh {}", fmt::join(finer, " x "), fmt::join(coarse, " x ")));
  };
  if (coarse.size() != finer.size()) throw refuse();
  // Per coarse axis, the finer axes it splits into.
  std::vector<std::vector<int>> runs;
  int fine_axis = 0;
  for (std::size_t l = 0; l < coarse.size(); ++l) {
    if (level_size(coarse[l]) != level_size(finer[l])) throw refuse();
    const std::vector<long long> fine_points = cut_points(finer[l]);
    std::size_t next = 0;
    for (long long p : cut_points(coarse[l])) {
      // Its axes of more than one device, else the last unit axis it takes; a unit factor
      // that takes none (the finer level has no axis there) is no cut at all.
      std::vector<int> run;
      const std::size_t from = next;
      while (next < fine_points.size() && fine_points[next] <= p) {
        if (finer[l][next] > 1) run.push_back(fine_axis + static_cast<int>(next));
        ++next;
      }
      if ((next == 0 ? 1 : fine_points[next - 1]) != p) throw refuse();
      if (run.empty() && next > from) run.push_back(fine_axis + static_cast<int>(next) - 1);
      runs.push_back(std::move(run));
    }
    fine_axis += static_cast<int>(finer[l].size());
  }
  auto remap = [&](const std::vector<int>& axes) {
    std::vector<int> out;
    for (int a : axes)
      for (int f : runs.at(a))
        if (std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
    return out;
  };
  for (NodeCut& cut : plan.node_cuts)
    for (std::vector<int>& axes : cut.loop_axes) axes = remap(axes);
  plan.replicate_axes = remap(plan.replicate_axes);
  if (plan.pipeline_axis >= 0) {
    const std::vector<int>& run = runs.at(plan.pipeline_axis);
    if (run.size() != 1) throw std::runtime_error(fmt::format("mesh {} splits the plan's pipeline axis", fmt::join(finer, " x ")));
    plan.pipeline_axis = run.front();
  }
  plan.mesh_factors = finer;
  plan.cuts_stamp = new_cuts_stamp();
  return plan;
}

std::vector<Plan> refine_to_common_mesh(const std::vector<Plan>& plans) {
  if (plans.empty()) throw std::runtime_error("refine_to_common_mesh: no plans");
  const Plan& first = plans.front();
  std::optional<MeshFactors> mesh = first.mesh_factors;
  for (const Plan& p : plans) {
    if (p.pipeline_stages() != first.pipeline_stages() || p.stage_of_node != first.stage_of_node ||
        p.micro_batches != first.micro_batches || p.global_batch != first.global_batch)
      throw std::runtime_error("refine_to_common_mesh: the plans' pipeline stages, micro-batches or batch differ");
    if (mesh) mesh = common_mesh_refinement(*mesh, p.mesh_factors);
  }
  if (!mesh) throw std::runtime_error("refine_to_common_mesh: the plans' meshes have no common refinement");
  std::vector<Plan> refined;
  for (const Plan& p : plans) {
    refined.push_back(refine_plan_mesh(p, *mesh));
    if (refined.back().pipeline_axis != refined.front().pipeline_axis)
      throw std::runtime_error("refine_to_common_mesh: the plans' pipelines lie on different mesh axes");
  }
  return refined;
}

void take_stage_cuts(Plan& plan, const std::vector<Plan>& refined, const std::vector<int>& plan_of_stage) {
  const int stages = plan.pipeline_stages();
  if (static_cast<int>(plan_of_stage.size()) != stages)
    throw std::runtime_error(fmt::format("take_stage_cuts: {} plans named for {} pipeline stages", plan_of_stage.size(), stages));
  for (int index : plan_of_stage)
    if (index < 0 || index >= static_cast<int>(refined.size()))
      throw std::runtime_error(fmt::format("take_stage_cuts: plan {} of {}", index, refined.size()));
  for (std::size_t id = 0; id < plan.node_cuts.size() && id < plan.stage_of_node.size(); ++id) {
    const int stage = plan.stage_of_node[id];
    if (stage >= 0 && stage < stages) plan.node_cuts[id] = refined[plan_of_stage[stage]].node_cuts.at(id);
  }
  plan.cuts_stamp = new_cuts_stamp();
}

}  // namespace symtensor::compiler
