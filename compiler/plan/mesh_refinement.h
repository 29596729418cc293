#pragma once
// One mesh for plans made on different factorizations of the same cluster, so that their cuts
// can be combined per operator (a pipeline whose stages each take their own tensor-parallel
// degree: tp=2 on one group's stages, tp=1 on another's; issue #32).
#include <optional>
#include <vector>

#include "compiler/plan/plan.h"

namespace symtensor::compiler {

using MeshFactors = std::vector<std::vector<int>>;  // per topology level, outermost first (Plan::mesh_factors)

// Factors, per level, whose consecutive runs multiply to each of a's and b's factors of that
// level (gpu [4, 2] and [2, 4] -> [2, 2, 2]); none when the levels differ in count or size, or
// their factors are not runs of one factorization ([3, 2] and [2, 3]).
std::optional<MeshFactors> common_mesh_refinement(const MeshFactors& a, const MeshFactors& b);

// The plan on `finer`, a refinement of its mesh factors: each mesh axis of its cuts, replicate
// axes and pipeline axis replaced by the run of finer axes it splits into (major to minor), the
// same devices doing the same work. Throws (one line) when `finer` does not refine the plan's
// mesh or splits its pipeline axis.
Plan refine_plan_mesh(Plan plan, const MeshFactors& finer);

// The plans (the same pipeline stages, micro-batches and batch, made on factorizations of one
// cluster, e.g. Megatron's layout at tp=4 and at tp=1) on their common mesh. Throws (one line)
// when they have none, or differ in any of those or in where the pipeline axis lands.
std::vector<Plan> refine_to_common_mesh(const std::vector<Plan>& plans);

// Each operator of `plan` takes the cuts of refined[plan_of_stage[s]] for its stage s (by
// plan.stage_of_node as it is now: call it again after the stages' layers move). `plan` and
// `refined` share a mesh (refine_to_common_mesh). Where consecutive stages' layouts differ, the
// activations are redistributed between them as between any two cuts. Throws (one line) when
// plan_of_stage does not name one plan per stage.
void take_stage_cuts(Plan& plan, const std::vector<Plan>& refined, const std::vector<int>& plan_of_stage);

}  // namespace symtensor::compiler
