// What a fleet search gives back: its plan's cluster, its exports and its description.
#include "compiler/search/fleet_search.h"

#include <set>
#include <stdexcept>
#include <string>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/plan/batch_shares.h"
#include "compiler/plan/plan_yaml.h"
#include "compiler/search/export_searched.h"

namespace symtensor::compiler {

hardware::Cluster cluster_of_plan(const hardware::Cluster& loaded, const Plan& plan) {
  if (!loaded.mixed() || plan.cluster == loaded.name) return loaded;
  if (std::optional<hardware::Cluster> part = hardware::fleet_part_named(loaded, plan.cluster)) return *part;
  throw std::runtime_error(fmt::format("the plan is for cluster '{}', neither the fleet '{}' nor one of its groups", plan.cluster,
                                       loaded.name));
}

ExportResult export_fleet_plan(ExportTarget target, Graph& graph, const hardware::Cluster& fleet,
                               const FleetSearchResult& r) {
  if (!r.heterogeneous && !r.batch_shares) return export_plan(target, graph, cluster_of_plan(fleet, r.plan.plan), r.plan.plan);
  const FleetStep& nearest = r.megatron.best();
  const hardware::Cluster on = cluster_of_plan(fleet, nearest.plan);
  ExportResult out = export_plan(target, graph, on, nearest.plan);
  std::string item;
  if (r.batch_shares) {
    item = fmt::format(
        "heterogeneous plan: batch shares by GPU speed ({}), uneven micro-batch counts per data-parallel replica; {} "
        "gives every data-parallel replica the same batch share",
        describe_batch_shares(r.plan.plan, cluster_of_plan(fleet, r.plan.plan), r.shares_dp), to_string(target));
  } else {
    std::string split;
    for (std::size_t s = 0; s < r.stage_groups.size(); ++s)
      split += fmt::format("{}{} {}", s ? ", " : "", r.stage_layers[s], fleet.groups[r.stage_groups[s]].device.name);
    item = fmt::format(
        "heterogeneous plan: pipeline stages on {} GPU types with their own layer counts ({} layers); {} gives every rank "
        "the same layers and batch share",
        std::set<int>(r.stage_groups.begin(), r.stage_groups.end()).size(), split, to_string(target));
  }
  out.not_expressible.insert(out.not_expressible.begin(), item);
  out.nearest = nearest.plan;
  out.nearest_yaml = plan_to_yaml(nearest.plan, graph, on);
  out.original_step_s = r.plan.step_time_s;
  out.original_fits = r.plan.fits;
  out.nearest_step_s = nearest.step_time_s;
  out.nearest_fits = nearest.fits;
  out.nearest_way = ExportResult::NearestWay::searched;
  out.nearest_how = fmt::format("Megatron-best on the mixed fleet (simulated): {}", nearest.label);
  if (target != ExportTarget::deepspeed) {  // JSON has no comments
    out.config = fmt::format(
        "# NOT SymTensor's plan for {}: {}.\n# Written: the nearest homogeneous plan, {} ({:.3f} s a step, simulated; "
        "SymTensor's plan: {:.3f} s, in plan.yaml).\n{}",
        fleet.name, item, nearest.label, nearest.step_time_s, r.plan.step_time_s, out.config);
  }
  return out;
}

std::string describe_fleet_result(const FleetSearchResult& r, const hardware::Cluster& fleet) {
  std::string s = fmt::format("mixed fleet {}:\n", fleet.name);
  for (std::size_t g = 0; g < fleet.groups.size(); ++g) {
    const hardware::DeviceGroup& group = fleet.groups[g];
    s += fmt::format("  group {}: {} x{} ({} nodes), pace {:.0f} TFLOP/s per GPU", g + 1, group.device.name, group.devices,
                     group.nodes, hardware::device_pace(group.device) / 1e12);
    if (r.heterogeneous) {
      int layers = 0, stages = 0;
      for (std::size_t st = 0; st < r.stage_groups.size(); ++st)
        if (r.stage_groups[st] == static_cast<int>(g)) layers += r.stage_layers[st], ++stages;
      s += stages ? fmt::format(": {} stage(s), {} layers", stages, layers) : std::string(": not used");
    }
    if (r.batch_shares) {
      const auto at = std::find(r.share_groups.begin(), r.share_groups.end(), static_cast<int>(g));
      const std::size_t i = at - r.share_groups.begin();
      s += at != r.share_groups.end() && i < r.plan.plan.group_micro_batches.size()
               ? fmt::format(": {} micro-batch(es) per replica", r.plan.plan.group_micro_batches[i])
               : std::string(": not used");
    }
    s += "\n";
  }
  auto line = [](const char* what, const FleetStep& step) {
    if (!step.found) return fmt::format("  {}: none{}\n", what, step.missing.empty() ? "" : " (" + step.missing + ")");
    return fmt::format("  {}: {:.3f} s{} - {}\n", what, step.step_time_s, step.fits ? "" : " (does not fit)", step.label);
  };
  s += line("Megatron-best (a)", r.megatron.subset);
  s += line("Megatron-best (b)", r.megatron.uniform);
  s += line("SymTensor", r.plan);
  if (r.batch_shares)
    s += fmt::format("  batch shares: {}\n", describe_batch_shares(r.plan.plan, cluster_of_plan(fleet, r.plan.plan), r.shares_dp));
  const FleetStep* baseline = r.megatron.subset.fits || r.megatron.uniform.fits ? &r.megatron.best() : nullptr;
  if (baseline && r.plan.fits)
    s += fmt::format("  speedup over Megatron-best: {:.2f}x\n", baseline->step_time_s / r.plan.step_time_s);
  if (r.ceiling > 0)
    s += fmt::format("  ceiling: {:.2f}x the fastest usable group alone (sum of group speeds); reached {:.0f}% of it\n",
                     r.ceiling, 100 * r.ceiling_share);
  return s;
}

}  // namespace symtensor::compiler
