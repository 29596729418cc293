#pragma once
// `symtensor export`: a plan as the launch arguments / config of a training framework
// (Megatron-LM flags, NeMo 2 MegatronStrategy, torchtitan TOML, DeepSpeed JSON, a PyTorch
// DTensor script, JAX PartitionSpecs). Where the target cannot express the plan (a
// per-operator cut that is not its recipe, uneven per-layer choices, a feature it lacks),
// each such item is one line of `not_expressible`, and the nearest plan that it can express
// is priced next to the original with the same analytic model (analyze_plan + estimate_step).
// The nearest plan is the better of two (issue #30), fits first, then step time: the plan
// adjusted item by item (the Megatron layout of the recovered recipe with
// apply_target_limits's changes) and the fastest plan the target runs as written, which the
// caller's search inside the target gives (export_plan in compiler/search/export_searched.h
// runs the SymTensor search bounded by the target, as `compile --stack T`). A plan the
// target writes exactly is written as it is, with no search.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler/export/recipe.h"
#include "compiler/ir/graph.h"
#include "compiler/plan/plan.h"
#include "compiler/strategies/export_target.h"
#include "hardware/cluster.h"

namespace symtensor::compiler {

struct ExportResult {
  ExportTarget target = ExportTarget::megatron;
  ParallelRecipe recipe;                 // as the target writes it (adjusted, or the nearest plan's)
  ParallelRecipe plan_recipe;            // the exported plan's own (recover_recipe), before the target's limits
  std::vector<std::string> not_expressible;
  std::string config;                    // the exported file's text
  // Written beside it: (".suffix" appended to the file's name, or a file name of its own, text).
  std::vector<std::pair<std::string, std::string>> extra;
  std::optional<Plan> nearest;           // set when not_expressible is not empty and a nearest plan exists
  std::string nearest_yaml;              // its plan.yaml, with its prediction
  double original_step_s = 0, nearest_step_s = 0;
  bool original_fits = true, nearest_fits = true;
  // How the nearest plan was found: by the search inside the target or adjusted item by item.
  enum class NearestWay { none, adjusted, searched };
  NearestWay nearest_way = NearestWay::none;
  bool searched = false;     // the search inside the target ran (an inexact training plan)
  std::string nearest_how;   // one line: the way, and the other candidate's prediction
  std::string nothing_fits;  // one line when the nearest plan written does not fit memory (nothing inside does)
  bool exact() const { return not_expressible.empty(); }
};

// The fastest plan `target` runs as written on the plan's own model, cluster and precision
// (the search inside the target); it throws one line when it finds none. Called only for a
// training plan the target does not write exactly.
using InsideSearch = std::function<Plan()>;

// The export, its nearest plan chosen between the plan adjusted item by item and
// search_inside's. Callers that want the search itself call export_plan
// (compiler/search/export_searched.h).
ExportResult export_plan_with(ExportTarget target, Graph& graph, const hardware::Cluster& cluster, const Plan& plan,
                              const InsideSearch& search_inside);

// What export_plan would list as not expressible for a training plan, the model's
// architecture aside (empty: the target writes the plan exactly). The searches bounded by a
// target check whole plans with it (compiler/export/target_limits.h).
std::vector<std::string> target_items(ExportTarget target, Graph& graph, const hardware::Cluster& cluster, const Plan& plan);

// The summary printed by `export` and `compile --export`: items, both predictions.
std::string export_summary(const ExportResult& result, const std::string& path);

// The file name `compile --export` uses in its output folder: megatron.args, nemo_strategy.py,
// torchtitan.toml, deepspeed.json, dtensor_parallelize.py, jax_shardings.py.
std::string default_export_file(ExportTarget t);

// (file name, text) of the config named `name`, what goes beside it (NAME.pipeline.py for
// DeepSpeed) and, when the plan is not exact, NAME.nearest.yaml.
std::vector<std::pair<std::string, std::string>> export_files(const ExportResult& result, const std::string& name);

// Writes the exported config to `path` and, when the plan is not exact, the nearest plan
// to PATH.nearest.yaml beside it, all or nothing (sim::write_files_atomically).
void write_export(const ExportResult& result, const std::string& path);

}  // namespace symtensor::compiler
