#pragma once
// ZeRO per pipeline stage (Plan::stage_zero_stages), raised only where a stage's memory needs
// it: on a mixed fleet the stages on memory-poor devices shard their model states further
// while the others keep theirs (issue #32; Megatron-LM and torchtitan shard alike on every rank).
#include <functional>

#include "compiler/search/search_common.h"

namespace symtensor::compiler {

// From `e`, the evaluation of `plan`: while some stage does not fit its devices' memory,
// raises that stage's ZeRO stage by one (the distributed optimizer counts as 1; at most 3),
// the others keeping theirs, and prices the plan again with `evaluate`. Sets on `plan` the
// last plan priced and returns its evaluation: `e` unchanged when it fits, is invalid, or no
// stage over its memory can shard more.
Evaluation shard_stages_as_needed(Plan& plan, Evaluation e, const std::function<Evaluation(const Plan&)>& evaluate);

}  // namespace symtensor::compiler
