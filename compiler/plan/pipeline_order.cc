#include "compiler/plan/pipeline_order.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace symtensor::compiler {
namespace {

// Megatron's unit k -> (micro-batch, chunk): micro-batches go in groups of `stages`,
// each group through chunk 0, then chunk 1, ...; backward visits chunks in reverse.
PipelineUnit interleaved_unit(int k, bool forward, int stages, int chunks) {
  const int group = k / (stages * chunks), in_group = k % (stages * chunks);
  const int chunk = in_group / stages;
  return {forward, group * stages + in_group % stages, forward ? chunk : chunks - 1 - chunk};
}

}  // namespace

std::vector<PipelineUnit> pipeline_order(Schedule schedule, int stages, int stage, int micro_batches, int chunks) {
  if (stages < 1 || stage < 0 || stage >= stages || micro_batches < 1 || chunks < 1)
    throw std::runtime_error(fmt::format("pipeline schedule: bad sizes (stage {} of {}, {} micro-batches, {} chunks)",
                                         stage, stages, micro_batches, chunks));
  std::vector<PipelineUnit> order;
  const int m = micro_batches;
  if (schedule == Schedule::gpipe) {
    for (int c = 0; c < chunks; ++c)
      for (int i = 0; i < m; ++i) order.push_back({true, i, c});
    for (int c = chunks - 1; c >= 0; --c)
      for (int i = 0; i < m; ++i) order.push_back({false, i, c});
    return order;
  }
  if (chunks == 1) {
    const int warmup = std::min(stages - stage - 1, m);
    for (int i = 0; i < warmup; ++i) order.push_back({true, i, 0});
    for (int i = 0; i + warmup < m; ++i) {
      order.push_back({true, i + warmup, 0});
      order.push_back({false, i, 0});
    }
    for (int i = std::max(m - warmup, 0); i < m; ++i) order.push_back({false, i, 0});
    return order;
  }
  if (m % stages != 0)
    throw std::runtime_error(fmt::format(
        "interleaved 1F1B: {} micro-batches are not a multiple of the {} pipeline stages (Megatron-LM requires it)", m,
        stages));
  const int total = m * chunks;
  const int warmup = std::min(2 * (stages - stage - 1) + (chunks - 1) * stages, total);
  for (int k = 0; k < warmup; ++k) order.push_back(interleaved_unit(k, true, stages, chunks));
  for (int k = 0; k + warmup < total; ++k) {
    order.push_back(interleaved_unit(k + warmup, true, stages, chunks));
    order.push_back(interleaved_unit(k, false, stages, chunks));
  }
  for (int k = total - warmup; k < total; ++k) order.push_back(interleaved_unit(k, false, stages, chunks));
  return order;
}

}  // namespace symtensor::compiler
