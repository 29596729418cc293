#pragma once
// Full recomputation of only as many layers as memory needs (Plan::recompute_layers), per
// pipeline stage: what the SymTensor search and the fleet search's pipelines both choose.
// Mist (EuroSys'25) and Aceso (EuroSys'24) tune recomputation per stage; Megatron's block
// method takes one count for all.
#include <functional>

#include "compiler/search/search_common.h"

namespace symtensor::compiler {

// Sets on `plan` (recompute: full) per stage the fewest first layers whose recomputation makes
// the stage fit, priced by `evaluate`. A stage's memory depends on its own count alone and
// falls by the same bytes per recomputed layer (the layers alike), so the counts come from the
// peaks with none and with all of them recomputed, then are checked (and raised where a stage
// still does not fit): a few evaluations whatever the depth. Returns the last evaluation;
// invalid when some stage does not fit with all its layers recomputed, or when not even no
// recomputation would be shorter than `beat` (a step to beat; infinity: none).
Evaluation recompute_fewest_layers(Plan& plan, const NumericGraph& ng, const std::function<Evaluation(const Plan&)>& evaluate,
                                   double beat = kInfinity);

}  // namespace symtensor::compiler
