#include "compiler/lowering/lower_plan.h"

#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "compiler/lowering/pipeline_order.h"
#include "simulator/program/task_factory.h"

namespace symtensor::compiler {
namespace {

using sim::Deps;
const std::string kCompute(sim::kComputeStream);

class Lowerer {
 public:
  Lowerer(const PlanAnalysis& a, const Plan& plan, const hardware::DeviceMesh& mesh, const LoweringOptions& options)
      : a_(a), plan_(plan), mesh_(mesh), options_(options), layout_(build_stage_layout(a, plan, options)) {
    // The stages timed by an analysis on their own device: that analysis's layout, one per analysis.
    for (std::size_t s = 0; s < options.stage_timing.size(); ++s) {
      const PlanAnalysis* timing = options.stage_timing[s];
      if (!timing || timing == &a) continue;
      auto it = timed_layouts_.find(timing);
      if (it == timed_layouts_.end()) it = timed_layouts_.emplace(timing, build_stage_layout(*timing, plan, options)).first;
      if (it->second.stages != layout_.stages || it->second.chunks != layout_.chunks)
        throw std::logic_error("lowering: a stage's timing analysis differs in its stages");
    }
  }

  sim::Program run() {
    sim::Program prog;
    prog.name = fmt::format("{} plan: {} stage(s) x {} chunk(s), {} micro-batch(es), {}", plan_.strategy,
                            layout_.stages, layout_.chunks, plan_.micro_batches, to_string(plan_.schedule));
    prog.mesh = mesh_.axes();
    classes_.resize(layout_.stages);
    assign_ranks();
    for (int s = 0; s < layout_.stages; ++s) lower_stage(s);
    add_receives();
    prog.rank_classes = std::move(classes_);
    return prog;
  }

 private:
  struct Channel {
    std::vector<std::pair<std::string, double>> recvs;  // the receiver's ids, in the sender's order
  };

  void assign_ranks() {
    const int n = mesh_.num_devices();
    const int axis = plan_.pipeline_axis;
    if (axis >= static_cast<int>(mesh_.axes().size()))
      throw std::runtime_error(fmt::format("lowering: pipeline axis {} is not a mesh axis", axis));
    if (axis >= 0 && mesh_.axes()[axis].size != layout_.stages)
      throw std::runtime_error(fmt::format("lowering: pipeline axis '{}' has size {} but the plan has {} stages",
                                           mesh_.axes()[axis].name, mesh_.axes()[axis].size, layout_.stages));
    for (int s = 0; s < layout_.stages; ++s) {
      classes_[s].name = stage_class_name(s);
      if (s < static_cast<int>(a_.stage_memory.size())) {
        const StageMemory& m = a_.stage_memory[s];
        classes_[s].static_memory = {m.parameters, m.gradients, m.optimizer,
                                     m.working_buffers + m.collective_buffers + m.reserve};
      }
    }
    for (int r = 0; r < n; ++r) {
      int stage = 0;
      if (axis >= 0) stage = (r / mesh_.axes()[axis].stride) % mesh_.axes()[axis].size;
      classes_[stage].ranks.push_back(r);
    }
  }

  std::vector<std::string> group_names(const CommOp& op) const {
    std::vector<std::string> names;
    for (int axis : op.axes) {
      if (axis < 0 || axis >= static_cast<int>(mesh_.axes().size()))
        throw std::runtime_error(fmt::format("lowering: a collective (tensor #{}) uses unknown mesh axis {}", op.tensor, axis));
      if (axis == plan_.pipeline_axis)
        throw std::runtime_error(fmt::format("lowering: a collective (tensor #{}) spans the pipeline axis '{}'", op.tensor,
                                             mesh_.axes()[axis].name));
      names.push_back(mesh_.axes()[axis].name);
    }
    return names;
  }

  bool trivial(const CommOp& op) const {
    int size = 1;
    for (int axis : op.axes)
      if (axis >= 0 && axis < static_cast<int>(mesh_.axes().size())) size *= mesh_.axes()[axis].size;
    return op.axes.empty() || size <= 1 || op.bytes <= 0;
  }

  // The analysis timing stage s (LoweringOptions::stage_timing), nullptr when it is the lowered one.
  const PlanAnalysis* timing_of(int s) const {
    if (s >= static_cast<int>(options_.stage_timing.size())) return nullptr;
    const PlanAnalysis* timing = options_.stage_timing[s];
    return timing == &a_ ? nullptr : timing;
  }
  // Stage s's chunk work as its timing analysis prices it (nullptr: as the lowered one).
  const ChunkWork* timed_work(int s, int chunk) const {
    const PlanAnalysis* timing = timing_of(s);
    return timing ? &timed_layouts_.at(timing).work[s][chunk] : nullptr;
  }

  // Emits a chain of segments; returns the ids the next task must wait for. `timed`: the same
  // segments priced on the stage's own device, whose compute durations the tasks take.
  Deps emit_chain(sim::RankClass& rc, const std::vector<Segment>& segments, const std::string& prefix, Deps deps,
                  const std::vector<Segment>* timed = nullptr) {
    if (timed && timed->size() != segments.size())
      throw std::logic_error("lowering: a stage's timing analysis differs in its work");
    std::vector<std::string> computes;
    Deps beside;  // overlapped collectives running beside the next compute block
    // Exchanges beside the adjacent micro-batch's compute (CommOp::beside_microbatch): off the
    // chain, which waits for them only at its end.
    Deps detached;
    // ZeRO-3 gathers come a unit (a layer, FSDP's wrapping) at a time; computes before the
    // current unit's gathers and before the previous unit's (-1: no unit yet).
    int unit_start = -1, previous_unit_start = -1;
    for (size_t i = 0; i < segments.size(); ++i) {
      const Segment& seg = segments[i];
      std::string id = prefix;  // prefix.i (fmt::format's type-erased call cost more, a million times over)
      id += '.';
      id += std::to_string(i);
      switch (seg.kind) {
        case Segment::Kind::compute: {
          sim::Task t = sim::compute_task(id, seg.flops, seg.bytes, plan_.precision, std::move(deps));
          const Segment& timing = timed ? (*timed)[i] : seg;
          if (timing.kind != Segment::Kind::compute) throw std::logic_error("lowering: a stage's timing analysis differs in its work");
          if (timing.seconds > 0) t.duration_s = timing.seconds;
          rc.tasks.push_back(std::move(t));
          computes.push_back(id);
          deps = {id};
          deps.insert(deps.end(), beside.begin(), beside.end());
          beside.clear();
          break;
        }
        case Segment::Kind::collective:
          if (trivial(seg.comm)) break;
          if (seg.comm.beside_microbatch) {
            rc.tasks.push_back(sim::collective_task(id, "comm_ep", seg.comm.kind, seg.comm.bytes, group_names(seg.comm), deps));
            detached.push_back(id);
            break;
          }
          if (seg.comm.overlapped) {
            rc.tasks.push_back(sim::collective_task(id, "comm_cp", seg.comm.kind, seg.comm.bytes, group_names(seg.comm), deps));
            beside.push_back(id);
            break;
          }
          rc.tasks.push_back(sim::collective_task(id, "comm_tp", seg.comm.kind, seg.comm.bytes, group_names(seg.comm), std::move(deps)));
          deps = {id};
          break;
        case Segment::Kind::gather: {
          if (trivial(seg.comm)) break;
          // Two units' buffers (FSDP's prefetch of one unit): a unit's gather may start once
          // the unit before the previous one has computed and freed its weights.
          if (unit_start != static_cast<int>(computes.size())) previous_unit_start = unit_start, unit_start = static_cast<int>(computes.size());
          Deps after;
          if (previous_unit_start >= 1) after.push_back(computes[previous_unit_start - 1]);
          rc.tasks.push_back(sim::collective_task(id, "comm_zero", seg.comm.kind, seg.comm.bytes, group_names(seg.comm), after));
          deps.push_back(id);
          break;
        }
      }
    }
    deps.insert(deps.end(), beside.begin(), beside.end());
    deps.insert(deps.end(), detached.begin(), detached.end());
    return deps;
  }

  double p2p_bytes(int boundary) const {
    const auto& b = a_.p2p_bytes;
    if (b.empty()) return 0;
    const int virtual_boundaries = layout_.stages * layout_.chunks - 1;
    if (static_cast<int>(b.size()) >= virtual_boundaries) return b[boundary];
    const int s = boundary % layout_.stages;
    if (s < static_cast<int>(b.size())) return b[s];
    double sum = 0;
    for (double x : b) sum += x;
    return sum / static_cast<double>(b.size());
  }

  void send(sim::RankClass& rc, int from, int to, const std::string& id, const std::string& recv_id, double bytes,
            Deps deps) {
    rc.tasks.push_back(sim::send_task(id, "p2p_send", stage_class_name(to), bytes, std::move(deps)));
    channels_[{from, to}].recvs.emplace_back(recv_id, bytes);
  }

  // At least as many tasks as stage s's class gets, add_receives' included (so its task list
  // grows once: a step program's class is tens of MB, moved and faulted in anew on each growth).
  std::size_t expected_tasks(int s, const std::vector<PipelineUnit>& units) const {
    std::size_t n = 1;  // the optimizer
    for (const PipelineUnit& u : units) {
      const ChunkWork& w = layout_.work[s][u.chunk];
      n += 3 + (u.forward ? w.forward.size() : w.recompute.size() + w.backward.size());  // + alloc/free, send, recv
    }
    for (const ChunkWork& w : layout_.work[s]) {
      n += w.param_syncs.size();
      for (const GradBucket& b : w.buckets) n += b.syncs.size();
    }
    return n;
  }

  void lower_stage(int s) {
    sim::RankClass& rc = classes_[s];
    const int P = layout_.stages, V = layout_.chunks, m = plan_.micro_batches;
    const int last_virtual = P * V - 1;
    if (m < 1) throw std::runtime_error(fmt::format("lowering: the plan has {} micro-batches", m));
    std::map<std::pair<int, int>, Deps> forward_end;
    std::vector<std::string> buckets;
    std::vector<std::pair<int, std::vector<std::string>>> deferred;  // (chunk, backward task ids) without overlap
    std::string last_compute;
    const bool training = plan_.mode == ExecutionMode::train;
    auto unit_id = [&](char kind, int mb, int c) { return V > 1 ? fmt::format("{}{}.{}", kind, mb, c) : fmt::format("{}{}", kind, mb); };

    const std::vector<PipelineUnit> units = pipeline_order(plan_.schedule, P, s, m, V);
    rc.tasks.reserve(rc.tasks.size() + expected_tasks(s, units));
    for (const PipelineUnit& u : units) {
      if (!u.forward && !training) continue;
      const int v = layout_.virtual_stage(s, u.chunk);
      const ChunkWork& w = layout_.work[s][u.chunk];
      const std::string tag = fmt::format("activations mb{} chunk{}", u.micro_batch, u.chunk);
      if (u.forward) {
        Deps deps;
        if (training && w.saved_bytes > 0) {
          rc.tasks.push_back(sim::alloc_task(unit_id('a', u.micro_batch, u.chunk), kCompute, w.saved_bytes, tag));
          deps.push_back(rc.tasks.back().id);
        }
        if (v > 0) deps.push_back(unit_id('R', u.micro_batch, u.chunk));
        const ChunkWork* tw = timed_work(s, u.chunk);
        deps = emit_chain(rc, w.forward, unit_id('f', u.micro_batch, u.chunk), deps, tw ? &tw->forward : nullptr);
        if (v < last_virtual) {
          const int to = (v + 1) % P, to_chunk = (v + 1) / P;
          send(rc, s, to, unit_id('S', u.micro_batch, u.chunk), unit_id('R', u.micro_batch, to_chunk), p2p_bytes(v), deps);
        }
        if (training) forward_end[{u.micro_batch, u.chunk}] = deps;
        continue;
      }
      Deps deps = forward_end[{u.micro_batch, u.chunk}];
      if (v < last_virtual) deps.push_back(unit_id('G', u.micro_batch, u.chunk));
      const ChunkWork* tw = timed_work(s, u.chunk);
      deps = emit_chain(rc, w.recompute, unit_id('r', u.micro_batch, u.chunk), deps, tw ? &tw->recompute : nullptr);
      const std::string bwd_prefix = unit_id('b', u.micro_batch, u.chunk);
      deps = emit_chain(rc, w.backward, bwd_prefix, deps, tw ? &tw->backward : nullptr);
      if (w.saved_bytes > 0)
        rc.tasks.push_back(sim::free_task(unit_id('d', u.micro_batch, u.chunk), kCompute, w.saved_bytes, tag, deps));
      if (v > 0) {
        const int to = (v - 1 + P) % P, to_chunk = (v - 1) / P;
        send(rc, s, to, unit_id('B', u.micro_batch, u.chunk), unit_id('G', u.micro_batch, to_chunk), p2p_bytes(v - 1), deps);
      }
      if (!deps.empty()) last_compute = deps.front();
      if (u.micro_batch == m - 1) {
        std::vector<std::string> ends;
        for (const GradBucket& b : w.buckets)
          ends.push_back(b.after_segment >= 0 ? fmt::format("{}.{}", bwd_prefix, b.after_segment)
                                              : (deps.empty() ? std::string() : deps.front()));
        if (options_.overlap_grad_sync) emit_buckets(rc, s, u.chunk, ends, buckets);
        else deferred.emplace_back(u.chunk, ends);
      }
    }
    if (!training) return;
    for (auto& [chunk, ends] : deferred) {
      for (auto& e : ends) e = last_compute;
      emit_buckets(rc, s, chunk, ends, buckets);
    }
    Deps after = buckets;
    if (!last_compute.empty()) after.push_back(last_compute);
    double state_bytes = rc.static_memory.model_states();
    sim::Task opt = sim::compute_task("optimizer", 0, state_bytes, plan_.precision, after);
    opt.kind = sim::TaskKind::optimizer;
    const PlanAnalysis& timing = timing_of(s) ? *timing_of(s) : a_;
    if (timing.optimizer_seconds_per_stage > 0) opt.duration_s = timing.optimizer_seconds_per_stage;
    rc.tasks.push_back(std::move(opt));
    for (int c = 0; c < V; ++c) {
      const auto& syncs = layout_.work[s][c].param_syncs;
      for (size_t j = 0; j < syncs.size(); ++j) {
        if (trivial(syncs[j])) continue;
        rc.tasks.push_back(sim::collective_task(fmt::format("param_gather.{}.{}", c, j), "comm_dp", syncs[j].kind,
                                                syncs[j].bytes, group_names(syncs[j]), {"optimizer"}));
      }
    }
  }

  void emit_buckets(sim::RankClass& rc, int stage, int chunk, const std::vector<std::string>& ends,
                    std::vector<std::string>& ids) {
    const ChunkWork& w = layout_.work[stage][chunk];
    for (size_t k = 0; k < w.buckets.size(); ++k) {
      for (size_t j = 0; j < w.buckets[k].syncs.size(); ++j) {
        const CommOp& op = w.buckets[k].syncs[j];
        if (trivial(op)) continue;
        std::string id = fmt::format("grad.{}.{}.{}", chunk, k, j);
        Deps deps;
        if (!ends[k].empty()) deps.push_back(ends[k]);
        rc.tasks.push_back(sim::collective_task(id, "comm_dp", op.kind, op.bytes, group_names(op), deps));
        ids.push_back(id);
      }
    }
  }

  // Receives go last: on each receiver, one stream per sending stage, in the sender's order,
  // so the k-th send from A to B meets the k-th receive in B from A.
  void add_receives() {
    for (const auto& [key, channel] : channels_) {
      const auto [from, to] = key;
      const std::string stream = fmt::format("p2p_recv.{}", stage_class_name(from));
      for (const auto& [id, bytes] : channel.recvs)
        classes_[to].tasks.push_back(sim::recv_task(id, stream, stage_class_name(from), bytes));
    }
  }

  const PlanAnalysis& a_;
  const Plan& plan_;
  const hardware::DeviceMesh& mesh_;
  const LoweringOptions& options_;
  StageLayout layout_;
  std::map<const PlanAnalysis*, StageLayout> timed_layouts_;  // per LoweringOptions::stage_timing analysis
  std::vector<sim::RankClass> classes_;
  std::map<std::pair<int, int>, Channel> channels_;
};

}  // namespace

std::string stage_class_name(int stage) { return fmt::format("stage{}", stage); }

sim::Program lower_plan(const PlanAnalysis& analysis, const Plan& plan, const hardware::Cluster& cluster,
                        const hardware::DeviceMesh& mesh, const LoweringOptions& options) {
  if (mesh.num_devices() != cluster.num_devices())
    throw std::runtime_error(fmt::format("lowering: the plan's mesh has {} devices but cluster '{}' has {}",
                                         mesh.num_devices(), cluster.name, cluster.num_devices()));
  return Lowerer(analysis, plan, mesh, options).run();
}

}  // namespace symtensor::compiler
