#include "compiler/export/export.h"

#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

#include "compiler/analysis/model_stats.h"
#include "compiler/base/units.h"
#include "compiler/cost/estimate_order.h"
#include "compiler/cost/plan_analysis.h"
#include "compiler/cost/step_estimate.h"
#include "compiler/cost/step_prediction.h"
#include "compiler/export/emitters.h"
#include "compiler/export/recipe_plan.h"
#include "compiler/export/target_limits.h"
#include "compiler/export/titan_flavor.h"
#include "compiler/plan/plan_yaml.h"
#include "simulator/stats/atomic_write.h"

namespace symtensor::compiler {
namespace {

StepEstimate price(Graph& graph, const hardware::Cluster& cluster, const Plan& plan) {
  return estimate_step(analyze_plan(graph, cluster, plan), plan, cluster);
}

std::string recipe_text(const ParallelRecipe& r) {
  return fmt::format("tp={} pp={} vp={} cp={} dp={} micro-batch={} accumulation={} global-batch={} sp={} distopt={} zero={}{} "
                     "recompute={}",
                     r.tp, r.pp, r.vp, r.cp, r.dp, r.micro_batch_size, r.micro_batches, r.global_batch, r.sp ? 1 : 0,
                     r.distopt ? 1 : 0, r.zero_stage, r.dp_replicate > 1 ? fmt::format(" replicate={}", r.dp_replicate) : "",
                     to_string(r.recompute));
}

// What the target's model definition cannot be told of the architecture, one line each
// (the parallel plan aside): Megatron-LM and NeMo take the flags the architecture reader
// found no counterpart for; torchtitan's llama3 builds none of DeepSeek's features
// (FRAMEWORKS.md documents no deepseek_v3 flavor fields); DeepSpeed's AutoTP split of
// latent attention is not documented, nor a pipeline's multi-token prediction layers kept off
// its even split. JAX's PartitionSpecs and DTensor's placements are per parameter (an MTP
// layer's included) and build no pipeline: no model flags.
std::vector<std::string> architecture_gaps(ExportTarget t, const ModelArchitecture& m, const ParallelRecipe& r) {
  std::vector<std::string> gaps;
  switch (t) {
    case ExportTarget::megatron:
    case ExportTarget::nemo:
      for (const auto& g : m.megatron_gaps) gaps.push_back("model: " + g);
      break;
    case ExportTarget::torchtitan:
      for (const auto& f : m.deepseek_features())
        gaps.push_back("model: " + f + ": torchtitan's llama3 does not build it and no deepseek_v3 flavor fields are documented to write");
      for (const auto& f : m.gpt_oss_features()) gaps.push_back("model: " + f + ": torchtitan's llama3 does not build it");
      for (const auto& f : m.nemotron_features()) gaps.push_back("model: " + f + ": torchtitan's llama3 does not build it");
      // What else the written llama3 flavor cannot build (a Mixtral's experts, a tied LM head): the
      // config names it as a placeholder, so the plan is not expressed exactly.
      if (gaps.empty())
        for (const auto& d : titan_llama3_differences(m))
          gaps.push_back("model: " + d + ": torchtitan's llama3 does not build it (the model needs a TrainSpec of its own)");
      break;
    case ExportTarget::deepspeed:
      if (m.mla && r.tp > 1)
        gaps.push_back(fmt::format("model: multi-head latent attention under AutoTP tp={}: which projections AutoTP splits is not documented "
                                   "(the plan keeps the down projections whole)", r.tp));
      if (r.mtp_layers > 0 && r.pp > 1)
        gaps.push_back(fmt::format("model: {} multi-token prediction layer{} under pp={}: the plan puts them on the last stage, and "
                                   "PipelineModule's type:transformer partition counts every block it matches (give the MTP "
                                   "module a class its regex does not match)",
                                   r.mtp_layers, r.mtp_layers > 1 ? "s" : "", r.pp));
      break;
    case ExportTarget::dtensor:
    case ExportTarget::jax: break;
  }
  return gaps;
}

// Whether the target writes uneven first/last stages itself.
bool keeps_uneven_stages(ExportTarget t) { return t == ExportTarget::megatron; }

// What the target cannot write of the plan (the model's architecture aside), the recipe as
// it writes it and the plan that recipe stands for: export_plan's first half, and the
// searches' check of a plan (target_items).
struct TargetFit {
  ParallelRecipe plan_recipe;  // recover_recipe's, before the target's limits
  ParallelRecipe recipe;
  std::vector<std::string> items;
  RecipePlan recipe_plan;
};

TargetFit fit_to_target(ExportTarget target, Graph& graph, const hardware::Cluster& cluster, const Plan& plan, ExecutionMode mode) {
  TargetFit fit;
  ParallelRecipe& r = fit.recipe;
  r = recover_recipe(graph, cluster, plan);
  fit.plan_recipe = r;
  // JAX writes a PartitionSpec per parameter: per-operator cuts are its own; the other
  // targets write the recipe, so whatever the recipe does not say is not expressible.
  if (target != ExportTarget::jax) fit.items = r.not_expressible;
  const std::vector<std::string> limits = apply_target_limits(target, mode, r);
  fit.items.insert(fit.items.end(), limits.begin(), limits.end());

  // The plan the recipe stands for, compared operator by operator with the original.
  if (target == ExportTarget::jax && fit.items.empty()) return fit;  // nothing to build: the plan is written as it is
  RecipePlan& recipe_plan = fit.recipe_plan;
  recipe_plan = build_recipe_plan(graph, cluster, plan, r);
  if (recipe_plan.plan && keeps_uneven_stages(target) && r.uneven_stages() && r.layers_per_stage.size() == static_cast<std::size_t>(plan.pipeline_stages()))
    recipe_plan.plan->stage_of_node = plan.stage_of_node;
  if (recipe_plan.plan && target != ExportTarget::jax && limits.empty() && r.not_expressible.empty()) {
    for (auto& line : plan_differences(graph, cluster, plan, *recipe_plan.plan)) fit.items.push_back(std::move(line));
  }
  return fit;
}

}  // namespace

std::vector<std::string> target_items(ExportTarget target, Graph& graph, const hardware::Cluster& cluster, const Plan& plan) {
  return fit_to_target(target, graph, cluster, plan, ExecutionMode::train).items;
}

namespace {

// A candidate for the nearest plan with its prediction.
struct NearestCandidate {
  Plan plan;
  StepEstimate estimate;
  ParallelRecipe recipe;  // as the target writes it
  // Fits first, then step time; neither fits: the one needing less memory (better_estimate).
  bool better_than(const NearestCandidate& other) const { return better_estimate(estimate, other.estimate); }
};

std::string prediction_text(const StepEstimate& e) {
  return fmt::format("{}, {}", format_seconds(e.step_time_s),
                     e.fits ? fmt::format("fits ({} of {})", format_bytes(e.peak_memory), format_bytes(e.memory_capacity))
                            : fmt::format("does not fit ({} of {})", format_bytes(e.peak_memory), format_bytes(e.memory_capacity)));
}

// The fastest plan the target runs as written (the caller's search inside it), priced. Empty
// with `why` when the search finds none or its plan is not written exactly after all.
std::optional<NearestCandidate> searched_inside(ExportTarget target, Graph& graph, const hardware::Cluster& cluster, const Plan& plan,
                                                const InsideSearch& search, std::string& why) {
  NearestCandidate c;
  try {
    c.plan = search();
  } catch (const std::exception& e) {
    why = e.what();
    return std::nullopt;
  }
  c.plan.inputs = plan.inputs;  // the nearest plan exports on its own, as the original
  TargetFit fit = fit_to_target(target, graph, cluster, c.plan, plan.mode);
  if (!fit.items.empty()) {
    why = "its plan is not written exactly: " + fit.items.front();
    return std::nullopt;
  }
  c.recipe = std::move(fit.recipe);
  c.estimate = price(graph, cluster, c.plan);
  return c;
}

}  // namespace

ExportResult export_plan_with(ExportTarget target, Graph& graph, const hardware::Cluster& cluster, const Plan& plan,
                              const InsideSearch& search_inside) {
  ExportResult out;
  out.target = target;
  const StepEstimate original = price(graph, cluster, plan);
  out.original_step_s = original.step_time_s;
  out.original_fits = original.fits;

  TargetFit fit = fit_to_target(target, graph, cluster, plan, plan.mode);
  ParallelRecipe r = fit.recipe;
  out.plan_recipe = std::move(fit.plan_recipe);
  out.not_expressible = std::move(fit.items);
  RecipePlan& recipe_plan = fit.recipe_plan;
  const Plan* expressed = &plan;
  const ModelArchitecture arch = read_model_architecture(graph, node_iteration_spaces(graph));
  if (!out.exact()) {
    // Two candidates: the plan with each item adjusted, and the fastest plan of the search
    // inside the target (training plans: an inference plan is written as a training recipe).
    std::optional<NearestCandidate> adjusted, searched;
    if (recipe_plan.plan) {
      adjusted = NearestCandidate{*recipe_plan.plan, price(graph, cluster, *recipe_plan.plan), r};
      adjusted->recipe.micro_batches = recipe_plan.plan->micro_batches;  // a degree folded into dp leaves fewer per replica
    }
    std::string why_not_searched = "an inference plan is written as the training recipe of its layout";
    if (plan.mode == ExecutionMode::train) {
      out.searched = true;
      searched = searched_inside(target, graph, cluster, plan, search_inside, why_not_searched);
    }
    const std::string inside = "inside " + std::string(to_string(target));
    if (!adjusted && !searched) {
      out.not_expressible.push_back("no expressible plan near it: " + recipe_plan.error + "; the search " + inside + ": " +
                                    why_not_searched);
    } else {
      const bool take_searched = searched && (!adjusted || !adjusted->better_than(*searched));
      NearestCandidate& chosen = take_searched ? *searched : *adjusted;
      out.nearest_way = take_searched ? ExportResult::NearestWay::searched : ExportResult::NearestWay::adjusted;
      if (take_searched)
        out.nearest_how = "searched " + inside + " (the fastest plan it runs as written)" +
                          (adjusted ? "; the plan adjusted item by item: " + prediction_text(adjusted->estimate)
                                    : "; no plan adjusted item by item: " + recipe_plan.error);
      else
        out.nearest_how = "adjusted item by item" +
                          (searched ? "; the search " + inside + ": " + prediction_text(searched->estimate)
                                    : "; the search " + inside + " found none: " + why_not_searched);
      if (!chosen.estimate.fits)
        out.nothing_fits = fmt::format("{}: the nearest plan written does not fit ({} per device, {} available)",
                                       searched ? "no plan " + inside + " fits device memory"
                                                : "the search " + inside + " found no plan",
                                       format_bytes(chosen.estimate.peak_memory), format_bytes(chosen.estimate.memory_capacity));
      out.nearest_step_s = chosen.estimate.step_time_s;
      out.nearest_fits = chosen.estimate.fits;
      const PlanPrediction prediction = plan_prediction(chosen.estimate);
      out.nearest = std::move(chosen.plan);
      out.nearest_yaml = plan_to_yaml(*out.nearest, graph, cluster, &prediction);
      expressed = &*out.nearest;
      r = std::move(chosen.recipe);
    }
  }
  if (target == ExportTarget::jax) {  // the expressed plan's own axes
    const ParallelRecipe axes = recover_recipe(graph, cluster, *expressed);
    r.tp_axes = axes.tp_axes, r.dp_axes = axes.dp_axes, r.cp_axes = axes.cp_axes;
  }
  out.recipe = r;
  // The architecture's gaps make the export inexact without changing the plan written.
  for (auto& line : architecture_gaps(target, arch, r)) out.not_expressible.push_back(std::move(line));

  std::vector<std::string> header = {
      fmt::format("SymTensor export for {}: plan of strategy '{}' for {} on {} ({} devices)", to_string(target), plan.strategy,
                  plan.model, cluster.name, cluster.num_devices()),
      "recipe: " + recipe_text(r),
      fmt::format("predicted step time of the plan: {}{}", format_seconds(out.original_step_s), out.original_fits ? "" : " (does not fit)")};
  if (!out.exact()) header.insert(header.begin() + 2, "recipe of the plan itself: " + recipe_text(out.plan_recipe));
  if (out.exact()) {
    header.push_back("the plan is expressed exactly");
  } else {
    if (out.nearest) {
      header.push_back(fmt::format("predicted step time of the nearest expressible plan written here: {}{}",
                                   format_seconds(out.nearest_step_s), out.nearest_fits ? "" : " (does not fit)"));
      header.push_back("nearest plan " + out.nearest_how);
      if (!out.nothing_fits.empty()) header.push_back(out.nothing_fits);
    }
    header.push_back("not expressible:");
    for (const auto& item : out.not_expressible) header.push_back("  - " + item);
  }
  ExportContext context{graph, cluster, *expressed, r, arch, header};
  switch (target) {
    case ExportTarget::megatron: out.config = emit_megatron(context); break;
    case ExportTarget::nemo: out.config = emit_nemo(context); break;
    case ExportTarget::torchtitan:
      out.config = emit_torchtitan(context);
      if (std::string flavor = emit_torchtitan_flavor(context); !flavor.empty())
        out.extra.emplace_back(std::string(kTitanFlavorModule) + ".py", std::move(flavor));
      break;
    case ExportTarget::deepspeed:
      out.config = emit_deepspeed(context);
      out.extra.emplace_back(".pipeline.py", emit_deepspeed_pipeline(context));
      break;
    case ExportTarget::dtensor: out.config = emit_dtensor(context); break;
    case ExportTarget::jax: out.config = emit_jax(context); break;
  }
  return out;
}

std::string export_summary(const ExportResult& result, const std::string& path) {
  // The plan's own recipe; where the file writes another plan, that one's too.
  std::string s = fmt::format("{:<18}{}\n", "target", to_string(result.target));
  s += fmt::format("{:<18}{}\n", "recipe", recipe_text(result.exact() ? result.recipe : result.plan_recipe));
  s += fmt::format("{:<18}{}\n", "plan step time", format_seconds(result.original_step_s));
  if (result.exact()) {
    s += fmt::format("{:<18}exact\n", "expressed");
  } else {
    s += fmt::format("not expressible ({} items):\n", result.not_expressible.size());
    for (const auto& item : result.not_expressible) s += "  - " + item + "\n";
    if (result.nearest) {
      s += fmt::format("{:<18}{} (nearest expressible plan, {} as {}.nearest.yaml)\n", "nearest step time",
                       format_seconds(result.nearest_step_s), result.nearest_fits ? "fits" : "DOES NOT FIT, written", path);
      s += fmt::format("{:<18}{}\n", "nearest recipe", recipe_text(result.recipe));
      s += fmt::format("{:<18}{}\n", "nearest found", result.nearest_how);
      if (!result.nothing_fits.empty()) s += result.nothing_fits + "\n";
    } else {
      s += fmt::format("{:<18}{}\n", "written recipe", recipe_text(result.recipe));
    }
  }
  s += "config written to " + path + "\n";
  return s;
}

void write_export(const ExportResult& result, const std::string& path) {
  const std::filesystem::path p(path);
  const std::string dir = p.has_parent_path() ? p.parent_path().string() : std::string(".");
  const std::string name = p.filename().string();
  if (name.empty()) throw std::runtime_error("-o " + path + ": names a folder, not a file");
  sim::write_files_atomically(dir, export_files(result, name));
}

std::vector<std::pair<std::string, std::string>> export_files(const ExportResult& result, const std::string& name) {
  std::vector<std::pair<std::string, std::string>> files = {{name, result.config}};
  for (const auto& [suffix, content] : result.extra) files.emplace_back(suffix.starts_with('.') ? name + suffix : suffix, content);
  if (result.nearest) files.emplace_back(name + ".nearest.yaml", result.nearest_yaml);
  return files;
}

std::string default_export_file(ExportTarget t) {
  switch (t) {
    case ExportTarget::megatron: return "megatron.args";
    case ExportTarget::nemo: return "nemo_strategy.py";
    case ExportTarget::torchtitan: return "torchtitan.toml";
    case ExportTarget::deepspeed: return "deepspeed.json";
    case ExportTarget::dtensor: return "dtensor_parallelize.py";
    case ExportTarget::jax: return "jax_shardings.py";
  }
  return "export.txt";
}

}  // namespace symtensor::compiler
