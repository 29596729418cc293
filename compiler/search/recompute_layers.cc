#include "compiler/search/recompute_layers.h"

#include <algorithm>
#include <cmath>

namespace symtensor::compiler {

Evaluation recompute_fewest_layers(Plan& plan, const NumericGraph& ng, const std::function<Evaluation(const Plan&)>& evaluate,
                                   double beat) {
  std::vector<int> counts;
  stage_layer_ordinals(ng, plan, &counts);
  plan.recompute = RecomputePolicy::full;
  auto with = [&](const std::vector<int>& layers) {
    plan.recompute_layers = layers;
    return evaluate(plan);
  };
  // No recomputation bounds the step from below: no shorter than `beat`, no more work.
  const Evaluation none = with(std::vector<int>(counts.size(), 0));
  if (!none.valid || none.estimate.step_time_s >= beat) return Evaluation{};
  const Evaluation all = with(counts);
  if (!all.valid || !all.estimate.fits) return Evaluation{};
  std::vector<int> layers(counts.size(), 0);
  for (std::size_t s = 0; s < counts.size(); ++s) {
    const double over = none.estimate.stage_peak_memory.at(s) - all.estimate.stage_capacity(s);
    const double per_layer =
        counts[s] > 0 ? (none.estimate.stage_peak_memory[s] - all.estimate.stage_peak_memory.at(s)) / counts[s] : 0;
    if (over > 0) layers[s] = per_layer > 0 ? std::min(counts[s], static_cast<int>(std::ceil(over / per_layer))) : counts[s];
  }
  for (int attempt = 0;; ++attempt) {
    const Evaluation e = with(layers);
    if (!e.valid || e.estimate.fits) return e;
    bool raised = false;
    for (std::size_t s = 0; s < counts.size(); ++s)
      if (e.estimate.stage_peak_memory.at(s) > e.estimate.stage_capacity(s) && layers[s] < counts[s])
        layers[s] = attempt < 2 ? layers[s] + 1 : counts[s], raised = true;
    if (!raised) return e;  // every stage that does not fit already recomputes every layer
  }
}

}  // namespace symtensor::compiler
