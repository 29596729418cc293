#pragma once
// Which of two step estimates is the better plan: the one that fits, then the faster; where
// neither fits, the one needing less memory. The searches (Evaluation::better_than) and the
// export's nearest plan rank by it.
#include "compiler/cost/step_estimate.h"

namespace symtensor::compiler {

bool better_estimate(const StepEstimate& a, const StepEstimate& b);

}  // namespace symtensor::compiler
