#pragma once
// The strategies a Plan is made by (the SymTensor search, the ILP check, Megatron-LM with fixed
// knobs or its best configuration searched, dp, zero3, a plan file) and the options they share.
// make_plan, the dispatcher to them, is above the searches (compiler/search/make_plan.h).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/strategies/export_target.h"
#include "compiler/ir/graph.h"
#include "compiler/plan/plan.h"
#include "hardware/cluster.h"

namespace symtensor::compiler {

struct StrategyOptions {
  ExecutionMode mode = ExecutionMode::train;
  hardware::Precision precision = hardware::Precision::bf16;
  std::string megatron;   // knobs "tp=8,pp=8,mb=1,vp=3,sp=1,recompute=selective,distopt=1"
  std::string plan_file;  // strategy "file": the plan.yaml to read
  // Plan::moe_load_imbalance (--moe-load-imbalance): every strategy's plans carry it; a plan
  // file's own value unless given.
  std::optional<double> moe_load_imbalance;
  // The export target whose limits bound the search (compile --stack T / --export T): the
  // symtensor and megatron strategies return the fastest plan the target runs as written
  // (compiler/export/target_limits.h); empty: every plan. dp, zero3, ilp and file ignore it.
  std::optional<ExportTarget> bound;
  // Unbounded, with the target known (compile --unbounded with --stack T or --export T): the
  // SymTensor search also prices the fastest plan inside it as one of its candidates, so the
  // plan found is never slower than the bounded one (the bound only removes candidates).
  std::optional<ExportTarget> target_seed;
  // Set by the caller: where the SymTensor search under target_seed leaves the fastest plan
  // inside that target it priced (compile --export T --unbounded hands it to export_plan, which
  // would otherwise search for it again). Shared by the copies of the options.
  std::shared_ptr<std::optional<Plan>> target_plan_out;
};

// The strategies make_plan knows (compiler/search/make_plan.h), in the order `--help` lists them.
std::vector<std::string> strategy_names();

// Fills the fields every strategy shares: strategy, model (graph.source), cluster, mode,
// precision, global_batch (the value bound to `batch`; throws when it is not bound).
Plan plan_skeleton(const std::string& strategy, const Graph& graph, const hardware::Cluster& cluster,
                   const StrategyOptions& options);

}  // namespace symtensor::compiler
