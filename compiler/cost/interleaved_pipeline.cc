#include "compiler/cost/interleaved_pipeline.h"

#include <algorithm>

#include "compiler/plan/pipeline_order.h"

namespace symtensor::compiler {

std::vector<double> forward_flops_fractions(const std::vector<OpWork>& ops, int stages) {
  std::vector<double> total(std::max(stages, 1), 0.0), seen(total.size(), 0.0), fraction(ops.size(), 0.0);
  for (const OpWork& w : ops) total.at(w.stage) += w.fwd_flops;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const int s = ops[i].stage;
    if (total[s] > 0) fraction[i] = (seen[s] + ops[i].fwd_flops / 2) / total[s];
    seen[s] += ops[i].fwd_flops;
  }
  return fraction;
}

int chunk_of(double fraction, int chunks) { return std::clamp(static_cast<int>(fraction * chunks), 0, chunks - 1); }

std::vector<double> chunk_activations(const std::vector<SavedPosition>& saved, int chunks) {
  std::vector<double> bytes(std::max(chunks, 1), 0.0);
  for (const SavedPosition& s : saved) bytes[chunk_of(s.fraction, static_cast<int>(bytes.size()))] += s.bytes;
  return bytes;
}

double interleaved_peak_activations(const Plan& plan, int stage, const std::vector<double>& chunk_bytes) {
  const int stages = plan.pipeline_stages(), chunks = static_cast<int>(chunk_bytes.size());
  // The steady state repeats every stages x chunks units: after a warm-up of at most
  // (chunks + 1) x stages units, one such period holds the peak, and the cool-down only frees.
  // 3 x stages micro-batches (3 x stages x chunks units) cover both, whatever the step's count.
  const int micro_batches = std::min(plan.micro_batches, 3 * stages);
  double live = 0, peak = 0;
  for (const PipelineUnit& u : pipeline_order(plan.schedule, stages, stage, micro_batches, chunks)) {
    live += u.forward ? chunk_bytes[u.chunk] : -chunk_bytes[u.chunk];
    peak = std::max(peak, live);
  }
  return peak;
}

double stage_send_bytes(const std::vector<double>& p2p_bytes, int stage) {
  if (p2p_bytes.empty()) return 0;
  if (stage < static_cast<int>(p2p_bytes.size())) return p2p_bytes[stage];
  double sum = 0;
  for (double b : p2p_bytes) sum += b;
  return sum / static_cast<double>(p2p_bytes.size());
}

}  // namespace symtensor::compiler
