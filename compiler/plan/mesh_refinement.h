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

// One plan whose pipeline stage s runs as plans[plan_of_stage[s]] does: the plans (the same
// pipeline and stages, made on factorizations of one cluster, e.g. Megatron's layout at tp=4
// and at tp=1) refined to a common mesh, each operator taking the cuts of its stage's plan;
// everything else is plans[plan_of_stage[0]]'s. Where consecutive stages' layouts differ, the
// activations are redistributed between them as between any two cuts. Throws (one line) when
// the plans have no common mesh, their pipeline stages differ or plan_of_stage does not name
// one plan per stage.
Plan combine_stage_plans(const std::vector<Plan>& plans, const std::vector<int>& plan_of_stage);

}  // namespace symtensor::compiler
