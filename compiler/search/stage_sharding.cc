#include "compiler/search/stage_sharding.h"

#include <algorithm>

#include "compiler/search/recompute_layers.h"

namespace symtensor::compiler {

Evaluation shard_stages_as_needed(Plan& plan, Evaluation e, const std::function<Evaluation(const Plan&)>& evaluate) {
  const int stages = plan.pipeline_stages();
  while (e.valid && !e.estimate.fits) {
    Plan more = plan;
    if (more.stage_zero_stages.empty()) more.stage_zero_stages.assign(stages, more.zero_stage);
    bool raised = false;
    for (int s = 0; s < stages && s < static_cast<int>(e.estimate.stage_peak_memory.size()); ++s) {
      const int zero = more.effective_zero_stage_of(s);
      if (e.estimate.stage_peak_memory[s] <= e.estimate.stage_capacity(s) || zero >= 3) continue;
      more.stage_zero_stages[s] = zero + 1;
      raised = true;
    }
    if (!raised) break;
    more.zero_stage = *std::min_element(more.stage_zero_stages.begin(), more.stage_zero_stages.end());
    e = evaluate(more);
    plan = std::move(more);
  }
  return e;
}

}  // namespace symtensor::compiler
