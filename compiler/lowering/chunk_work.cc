#include "compiler/lowering/chunk_work.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "compiler/cost/interleaved_pipeline.h"

namespace symtensor::compiler {
namespace {

using CommKey = std::pair<int, std::vector<int>>;  // collective kind, mesh axes

// Adds `ops` into `merged`, summing bytes of the same collective on the same axes.
void merge_comm(std::vector<CommOp>& merged, const std::vector<CommOp>& ops) {
  for (const auto& op : ops) {
    auto same = std::find_if(merged.begin(), merged.end(), [&](const CommOp& m) {
      return m.kind == op.kind && m.axes == op.axes && m.every_micro_batch == op.every_micro_batch;
    });
    if (same == merged.end()) {
      merged.push_back(op);
      merged.back().tensor = kNone;
    } else {
      same->bytes += op.bytes;
      same->seconds += op.seconds;
    }
  }
}

struct Placement {
  std::vector<int> stage, chunk;  // per op index
  int stages = 1, chunks = 1;
};

Placement place_ops(const PlanAnalysis& a, const Plan& plan) {
  Placement p;
  p.stages = std::max(plan.pipeline_stages(), 1);
  p.chunks = p.stages > 1 ? std::max(plan.virtual_stages, 1) : 1;
  int max_stage = 0;
  for (const auto& op : a.ops) {
    if (op.stage < 0) throw std::runtime_error(fmt::format("lowering: node {} has negative stage {}", op.node, op.stage));
    max_stage = std::max(max_stage, op.stage);
  }
  const bool virtual_numbering = p.chunks > 1 && max_stage >= p.stages;
  if (max_stage >= p.stages * (virtual_numbering ? p.chunks : 1))
    throw std::runtime_error(fmt::format("lowering: an operator is on stage {} but the plan has {} stage(s) x {} chunk(s)",
                                         max_stage, p.stages, p.chunks));
  const size_t n = a.ops.size();
  p.stage.resize(n);
  p.chunk.resize(n, 0);
  for (size_t i = 0; i < n; ++i) {
    p.stage[i] = virtual_numbering ? a.ops[i].stage % p.stages : a.ops[i].stage;
    if (virtual_numbering) p.chunk[i] = a.ops[i].stage / p.stages;
  }
  if (virtual_numbering || p.chunks == 1) return p;
  // Split each stage's operators (in order) into chunks of equal forward FLOPs.
  const std::vector<double> fraction = forward_flops_fractions(a.ops, p.stages);
  for (size_t i = 0; i < n; ++i) p.chunk[i] = chunk_of(fraction[i], p.chunks);
  return p;
}

// For every parameter, the op index of its first use in its stage (its gradient is complete
// once that op's backward ran; its ZeRO-3 gather precedes that op).
std::vector<int> param_first_use(const PlanAnalysis& a, const Placement& place, const Graph* graph) {
  std::vector<int> use(a.params.size(), -1);
  std::vector<int> op_of_node(graph ? graph->nodes().size() : 0, -1);  // per node: its operator's index, or -1
  for (size_t i = 0; i < a.ops.size(); ++i)
    if (const NodeId n = a.ops[i].node; n >= 0 && n < static_cast<NodeId>(op_of_node.size()) && op_of_node[n] < 0)
      op_of_node[n] = static_cast<int>(i);
  std::vector<std::vector<int>> stage_ops(place.stages * place.chunks);
  for (size_t i = 0; i < a.ops.size(); ++i) stage_ops[place.stage[i]].push_back(static_cast<int>(i));
  std::vector<std::vector<int>> stage_params(place.stages);
  for (size_t k = 0; k < a.params.size(); ++k) {
    const ParamWork& pw = a.params[k];
    int stage = pw.stage % place.stages;
    if (graph && pw.tensor >= 0 && pw.tensor < static_cast<int>(graph->tensors().size())) {
      for (NodeId consumer : graph->tensor(pw.tensor).consumers) {
        const int op = op_of_node.at(consumer);
        if (op >= 0 && place.stage[op] == stage && (use[k] < 0 || op < use[k])) use[k] = op;
      }
    }
    if (use[k] < 0) stage_params[stage].push_back(static_cast<int>(k));
  }
  // Without a graph: parameters in order spread over the stage's operators by forward FLOPs.
  for (int s = 0; s < place.stages; ++s) {
    const auto& ops = stage_ops[s];
    const auto& params = stage_params[s];
    if (ops.empty() || params.empty()) continue;
    double total = 0;
    for (int i : ops) total += a.ops[i].fwd_flops;
    size_t j = 0;
    double seen = 0;
    for (size_t k = 0; k < params.size(); ++k) {
      const double target = total * (static_cast<double>(k) + 0.5) / static_cast<double>(params.size());
      while (j + 1 < ops.size() && seen + a.ops[ops[j]].fwd_flops < target) seen += a.ops[ops[j++]].fwd_flops;
      use[params[k]] = ops[j];
    }
  }
  return use;
}

class SegmentBuilder {
 public:
  explicit SegmentBuilder(std::vector<Segment>& out) : out_(out) {}

  void add_compute(double flops, double bytes, double seconds, const std::string& label) {
    if (open_ && label != block_.label) flush();
    if (!open_) {
      block_ = Segment{};
      block_.label = label;
      open_ = true;
    }
    block_.flops += flops;
    block_.bytes += bytes;
    block_.seconds += seconds;
  }
  // An operator's kernel with its collectives: the overlapped ones (CommOp::overlapped)
  // beside the kernel, then the kernel in a block of its own, then the blocking ones after.
  void add_op(double flops, double bytes, double seconds, const std::vector<CommOp>& comm, const std::string& label) {
    const bool beside = std::any_of(comm.begin(), comm.end(), [](const CommOp& op) { return op.overlapped; });
    if (beside) add_comm(Segment::Kind::collective, comm, label, true);
    add_compute(flops, bytes, seconds, label);
    if (beside) flush();
    add_comm(Segment::Kind::collective, comm, label, false);
  }
  void add_comm(Segment::Kind kind, const std::vector<CommOp>& ops, const std::string& label, bool overlapped = false) {
    if (std::none_of(ops.begin(), ops.end(), [&](const CommOp& op) { return op.overlapped == overlapped; })) return;
    flush();
    for (const auto& op : ops) {
      if (op.overlapped != overlapped) continue;
      Segment s;
      s.kind = kind;
      s.comm = op;
      s.label = label;
      out_.push_back(std::move(s));
    }
  }
  void flush() {
    if (open_) out_.push_back(block_);
    open_ = false;
  }
  int last_compute() const {
    for (int i = static_cast<int>(out_.size()) - 1; i >= 0; --i)
      if (out_[i].kind == Segment::Kind::compute) return i;
    return -1;
  }

 private:
  std::vector<Segment>& out_;
  Segment block_;
  bool open_ = false;
};

}  // namespace

StageLayout build_stage_layout(const PlanAnalysis& a, const Plan& plan, const LoweringOptions& options) {
  const Placement place = place_ops(a, plan);
  StageLayout layout;
  layout.stages = place.stages;
  layout.chunks = place.chunks;
  layout.work.assign(place.stages, std::vector<ChunkWork>(place.chunks));

  const std::vector<int> first_use = param_first_use(a, place, options.graph);
  std::vector<std::vector<int>> params_at(a.ops.size());  // params whose first use is op i
  for (size_t k = 0; k < a.params.size(); ++k)
    if (first_use[k] >= 0) params_at[first_use[k]].push_back(static_cast<int>(k));
  // Each operator's layer ("h.3"), or empty: read once (a segment asks for it several times).
  std::vector<std::string> labels(a.ops.size());
  if (const Graph* g = options.graph)
    for (std::size_t i = 0; i < a.ops.size(); ++i)
      if (const NodeId node = a.ops[i].node; node >= 0 && node < static_cast<int>(g->nodes().size()))
        labels[i] = layer_of(g->node(node).name);

  std::vector<std::vector<std::vector<int>>> ops_of(place.stages, std::vector<std::vector<int>>(place.chunks));
  std::vector<double> stage_saved(place.stages, 0.0);
  for (size_t i = 0; i < a.ops.size(); ++i) {
    ops_of[place.stage[i]][place.chunk[i]].push_back(static_cast<int>(i));
    stage_saved[place.stage[i]] += a.ops[i].saved_bytes;
  }

  for (int s = 0; s < place.stages; ++s) {
    for (int c = 0; c < place.chunks; ++c) {
      ChunkWork& w = layout.work[s][c];
      const auto& ops = ops_of[s][c];
      SegmentBuilder fwd(w.forward), rec(w.recompute), bwd(w.backward);
      // ZeRO-3 gathers a unit at a time (FSDP wraps each layer): a run of operators of one
      // layer, or an operator outside layers alone. A unit's gathers precede its first
      // operator in the forward pass and its last in the backward.
      std::vector<int> unit_of(ops.size());
      std::vector<std::vector<CommOp>> unit_gathers;
      for (std::size_t j = 0; j < ops.size(); ++j) {
        const std::string& l = labels[ops[j]];
        if (j == 0 || l.empty() || l != labels[ops[j - 1]]) unit_gathers.emplace_back();
        unit_of[j] = static_cast<int>(unit_gathers.size()) - 1;
        for (int k : params_at[ops[j]]) merge_comm(unit_gathers.back(), a.params[k].gather);
      }
      for (std::size_t j = 0; j < ops.size(); ++j) {
        const int i = ops[j];
        const OpWork& op = a.ops[i];
        if (j == 0 || unit_of[j] != unit_of[j - 1]) fwd.add_comm(Segment::Kind::gather, unit_gathers[unit_of[j]], labels[i]);
        fwd.add_op(op.fwd_flops, op.fwd_bytes, op.fwd_seconds + op.offload_fwd_seconds, op.fwd_comm, labels[i]);
        w.forward_flops += op.fwd_flops;
        w.backward_flops += op.bwd_flops;
        w.saved_bytes += op.saved_bytes;
        if (op.recomputed) {
          rec.add_op(op.fwd_flops, op.fwd_bytes, op.fwd_seconds, op.fwd_comm, labels[i]);
          w.recompute_flops += op.fwd_flops;
        }
        for (int k : params_at[i]) merge_comm(w.param_syncs, a.params[k].regather);
      }
      fwd.flush();
      rec.flush();

      GradBucket bucket;
      double bucket_bytes = 0;
      auto close_bucket = [&] {
        bwd.flush();
        bucket.after_segment = bwd.last_compute();
        w.buckets.push_back(std::move(bucket));
        bucket = GradBucket{};
        bucket_bytes = 0;
      };
      for (std::size_t r = ops.size(); r-- > 0;) {
        const int i = ops[r];
        const OpWork& op = a.ops[i];
        if (r + 1 == ops.size() || unit_of[r] != unit_of[r + 1])
          bwd.add_comm(Segment::Kind::gather, unit_gathers[unit_of[r]], labels[i]);
        bwd.add_op(op.bwd_flops, op.bwd_bytes, op.bwd_seconds + op.offload_bwd_seconds, op.bwd_comm, labels[i]);
        for (int k : params_at[i]) {
          merge_comm(bucket.syncs, a.params[k].grad_sync);
          for (const auto& sync : a.params[k].grad_sync) {
            bucket_bytes += sync.bytes;
            w.every_micro_batch_syncs = w.every_micro_batch_syncs || sync.every_micro_batch;
          }
        }
        if (bucket_bytes >= options.bucket_bytes && !bucket.syncs.empty()) close_bucket();
      }
      if (!bucket.syncs.empty()) close_bucket();
      bwd.flush();
      // An analysis without each operator's saved bytes (one read back from JSON): the stage's
      // activations spread evenly over its chunks. A chunk that saves nothing in a stage that
      // does keeps nothing.
      if (stage_saved[s] == 0 && s < static_cast<int>(a.stage_memory.size()))
        w.saved_bytes = a.stage_memory[s].activations_per_micro_batch / place.chunks;
    }
  }
  return layout;
}

}  // namespace symtensor::compiler
