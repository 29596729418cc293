#include "compiler/lowering/lower_plan.h"

#include <limits>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "compiler/lowering/pipeline_order.h"

namespace symtensor::compiler {
namespace {

// Tasks by index in their class. A dependency on a receive not yet added (receives go last,
// add_receives) is a placeholder, -1 - its key, resolved once they are there.
using Ids = std::vector<int>;
constexpr int kNoTask = std::numeric_limits<int>::min();

class Lowerer {
 public:
  Lowerer(const PlanAnalysis& a, const Plan& plan, const hardware::DeviceMesh& mesh, const LoweringOptions& options,
          bool named)
      : a_(a), plan_(plan), mesh_(mesh), options_(options), named_(named), layout_(build_stage_layout(a, plan, options)) {
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

  sim::LeanProgram run() {
    sim::LeanProgram prog;
    prog.shape.name = fmt::format("{} plan: {} stage(s) x {} chunk(s), {} micro-batch(es), {}", plan_.strategy,
                                  layout_.stages, layout_.chunks, plan_.micro_batches, to_string(plan_.schedule));
    prog.shape.mesh = mesh_.axes();
    shape_.resize(layout_.stages);
    classes_.resize(layout_.stages);
    assign_ranks();
    for (int s = 0; s < layout_.stages; ++s) lower_stage(s);
    add_receives();
    prog.shape.rank_classes = std::move(shape_);
    prog.classes = std::move(classes_);
    return prog;
  }

 private:
  struct Channel {
    std::vector<std::pair<int, double>> recvs;  // the receiver's receive keys, in the sender's order
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
      shape_[s].name = stage_class_name(s);
      if (s < static_cast<int>(a_.stage_memory.size())) {
        const StageMemory& m = a_.stage_memory[s];
        shape_[s].static_memory = {m.parameters, m.gradients, m.optimizer,
                                   m.working_buffers + m.collective_buffers + m.reserve};
      }
    }
    for (int r = 0; r < n; ++r) {
      int stage = 0;
      if (axis >= 0) stage = (r / mesh_.axes()[axis].stride) % mesh_.axes()[axis].size;
      shape_[stage].ranks.push_back(r);
    }
  }

  // The collective's group in stage s's class (its mesh axes, checked).
  int group_of(int s, const CommOp& op) {
    for (int axis : op.axes) {
      if (axis < 0 || axis >= static_cast<int>(mesh_.axes().size()))
        throw std::runtime_error(fmt::format("lowering: a collective (tensor #{}) uses unknown mesh axis {}", op.tensor, axis));
      if (axis == plan_.pipeline_axis)
        throw std::runtime_error(fmt::format("lowering: a collective (tensor #{}) spans the pipeline axis '{}'", op.tensor,
                                             mesh_.axes()[axis].name));
    }
    return classes_[s].group_index(op.axes);
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

  std::string unit_id(char kind, int mb, int chunk) const {
    return layout_.chunks > 1 ? fmt::format("{}{}.{}", kind, mb, chunk) : fmt::format("{}{}", kind, mb);
  }
  // The receive of micro-batch mb's activations (or, `gradient`, their gradient) for chunk.
  int recv_key(bool gradient, int mb, int chunk) const { return (mb * layout_.chunks + chunk) * 2 + (gradient ? 1 : 0); }
  std::string recv_id(int key) const {
    return unit_id(key % 2 ? 'G' : 'R', key / 2 / layout_.chunks, key / 2 % layout_.chunks);
  }

  // Appends a task to stage s's class; `name` makes its id when the ids are kept.
  template <class Name>
  int push(int s, const sim::LeanTask& task, const Ids& deps, Name&& name) {
    sim::LeanClass& lc = classes_[s];
    if (named_) lc.ids.push_back(name());
    return lc.push(task, deps);
  }
  sim::LeanTask collective(int s, std::string_view stream, const CommOp& op) {
    sim::LeanTask t;
    t.kind = sim::TaskKind::collective;
    t.stream = classes_[s].stream_index(stream);
    t.collective = op.kind;
    t.bytes = op.bytes;
    t.group = group_of(s, op);
    return t;
  }

  // Emits a chain of segments; returns the tasks the next task must wait for. `timed`: the
  // same segments priced on the stage's own device, whose compute durations the tasks take.
  // `segment_tasks` (when given): each segment's task, kNoTask for a segment without one.
  Ids emit_chain(int s, const std::vector<Segment>& segments, char kind, int mb, int chunk, Ids deps,
                 const std::vector<Segment>* timed = nullptr, std::vector<int>* segment_tasks = nullptr) {
    if (timed && timed->size() != segments.size())
      throw std::logic_error("lowering: a stage's timing analysis differs in its work");
    const std::string prefix = named_ ? unit_id(kind, mb, chunk) : std::string();
    Ids computes;
    Ids beside;  // overlapped collectives running beside the next compute block
    // Exchanges beside the adjacent micro-batch's compute (CommOp::beside_microbatch): off the
    // chain, which waits for them only at its end.
    Ids detached;
    // ZeRO-3 gathers come a unit (a layer, FSDP's wrapping) at a time; computes before the
    // current unit's gathers and before the previous unit's (-1: no unit yet).
    int unit_start = -1, previous_unit_start = -1;
    if (segment_tasks) segment_tasks->assign(segments.size(), kNoTask);
    for (size_t i = 0; i < segments.size(); ++i) {
      const Segment& seg = segments[i];
      auto name = [&] { return prefix + '.' + std::to_string(i); };
      int task = kNoTask;
      switch (seg.kind) {
        case Segment::Kind::compute: {
          sim::LeanTask t;
          t.stream = classes_[s].stream_index(sim::kComputeStream);
          t.flops = seg.flops, t.bytes = seg.bytes, t.precision = plan_.precision;
          const Segment& timing = timed ? (*timed)[i] : seg;
          if (timing.kind != Segment::Kind::compute) throw std::logic_error("lowering: a stage's timing analysis differs in its work");
          if (timing.seconds > 0) t.duration_s = timing.seconds;
          task = push(s, t, deps, name);
          computes.push_back(task);
          deps.assign(1, task);
          deps.insert(deps.end(), beside.begin(), beside.end());
          beside.clear();
          break;
        }
        case Segment::Kind::collective:
          if (trivial(seg.comm)) break;
          if (seg.comm.beside_microbatch) {
            task = push(s, collective(s, "comm_ep", seg.comm), deps, name);
            detached.push_back(task);
            break;
          }
          if (seg.comm.overlapped) {
            task = push(s, collective(s, "comm_cp", seg.comm), deps, name);
            beside.push_back(task);
            break;
          }
          task = push(s, collective(s, "comm_tp", seg.comm), deps, name);
          deps.assign(1, task);
          break;
        case Segment::Kind::gather: {
          if (trivial(seg.comm)) break;
          // Two units' buffers (FSDP's prefetch of one unit): a unit's gather may start once
          // the unit before the previous one has computed and freed its weights.
          if (unit_start != static_cast<int>(computes.size())) previous_unit_start = unit_start, unit_start = static_cast<int>(computes.size());
          Ids after;
          if (previous_unit_start >= 1) after.push_back(computes[previous_unit_start - 1]);
          task = push(s, collective(s, "comm_zero", seg.comm), after, name);
          deps.push_back(task);
          break;
        }
      }
      if (segment_tasks) (*segment_tasks)[i] = task;
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

  // Stage `from`'s send (its id kind/mb/chunk) to stage `to`, where receive `key` meets it.
  void send(int from, int to, char kind, int mb, int chunk, int key, double bytes, const Ids& deps) {
    sim::LeanTask t;
    t.kind = sim::TaskKind::send;
    t.stream = classes_[from].stream_index("p2p_send");
    t.peer = to;
    t.bytes = bytes;
    push(from, t, deps, [&] { return unit_id(kind, mb, chunk); });
    channels_[{from, to}].recvs.emplace_back(key, bytes);
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
    sim::LeanClass& lc = classes_[s];
    const int P = layout_.stages, V = layout_.chunks, m = plan_.micro_batches;
    const int last_virtual = P * V - 1;
    if (m < 1) throw std::runtime_error(fmt::format("lowering: the plan has {} micro-batches", m));
    std::map<std::pair<int, int>, Ids> forward_end;
    std::map<std::pair<int, int>, int> tag_of;  // (micro-batch, chunk) -> its activations' tag
    Ids buckets;
    std::vector<std::pair<int, Ids>> deferred;  // (chunk, backward tasks) without overlap
    int last_compute = kNoTask;
    const bool training = plan_.mode == ExecutionMode::train;
    const int compute = lc.stream_index(sim::kComputeStream);
    auto tag = [&](int mb, int chunk) {
      auto [it, fresh] = tag_of.try_emplace({mb, chunk}, static_cast<int>(lc.tags.size()));
      if (fresh) lc.tags.push_back(fmt::format("activations mb{} chunk{}", mb, chunk));
      return it->second;
    };

    const std::vector<PipelineUnit> units = pipeline_order(plan_.schedule, P, s, m, V);
    const std::size_t expected = expected_tasks(s, units);
    lc.tasks.reserve(expected);
    lc.dep_start.reserve(expected + 1);
    lc.deps.reserve(2 * expected);
    if (named_) lc.ids.reserve(expected);
    std::vector<int> backward_tasks;
    for (const PipelineUnit& u : units) {
      if (!u.forward && !training) continue;
      const int v = layout_.virtual_stage(s, u.chunk);
      const ChunkWork& w = layout_.work[s][u.chunk];
      const int mb = u.micro_batch, chunk = u.chunk;
      if (u.forward) {
        Ids deps;
        if (training && w.saved_bytes > 0) {
          sim::LeanTask t;
          t.kind = sim::TaskKind::alloc, t.stream = compute, t.bytes = w.saved_bytes, t.tag = tag(mb, chunk);
          deps.push_back(push(s, t, {}, [&] { return unit_id('a', mb, chunk); }));
        }
        if (v > 0) deps.push_back(-1 - recv_key(false, mb, chunk));
        const ChunkWork* tw = timed_work(s, chunk);
        deps = emit_chain(s, w.forward, 'f', mb, chunk, std::move(deps), tw ? &tw->forward : nullptr);
        if (v < last_virtual) {
          const int to = (v + 1) % P, to_chunk = (v + 1) / P;
          send(s, to, 'S', mb, chunk, recv_key(false, mb, to_chunk), p2p_bytes(v), deps);
        }
        if (training) forward_end[{mb, chunk}] = deps;
        continue;
      }
      Ids deps = forward_end[{mb, chunk}];
      if (v < last_virtual) deps.push_back(-1 - recv_key(true, mb, chunk));
      const ChunkWork* tw = timed_work(s, chunk);
      deps = emit_chain(s, w.recompute, 'r', mb, chunk, std::move(deps), tw ? &tw->recompute : nullptr);
      deps = emit_chain(s, w.backward, 'b', mb, chunk, std::move(deps), tw ? &tw->backward : nullptr, &backward_tasks);
      if (w.saved_bytes > 0) {
        sim::LeanTask t;
        t.kind = sim::TaskKind::free, t.stream = compute, t.bytes = w.saved_bytes, t.tag = tag(mb, chunk);
        push(s, t, deps, [&] { return unit_id('d', mb, chunk); });
      }
      if (v > 0) {
        const int to = (v - 1 + P) % P, to_chunk = (v - 1) / P;
        send(s, to, 'B', mb, chunk, recv_key(true, mb, to_chunk), p2p_bytes(v - 1), deps);
      }
      if (!deps.empty()) last_compute = deps.front();
      if (mb == m - 1) {
        Ids ends;
        for (const GradBucket& b : w.buckets) {
          if (b.after_segment < 0) {
            ends.push_back(deps.empty() ? kNoTask : deps.front());
            continue;
          }
          if (b.after_segment >= static_cast<int>(backward_tasks.size()) || backward_tasks[b.after_segment] == kNoTask)
            throw std::runtime_error(fmt::format("lowering: stage {}: a gradient bucket follows backward segment {}, "
                                                 "which has no task", s, b.after_segment));
          ends.push_back(backward_tasks[b.after_segment]);
        }
        if (options_.overlap_grad_sync) emit_buckets(s, chunk, ends, buckets);
        else deferred.emplace_back(chunk, ends);
      }
    }
    if (training) {
      for (auto& [chunk, ends] : deferred) {
        for (auto& e : ends) e = last_compute;
        emit_buckets(s, chunk, ends, buckets);
      }
      Ids after = buckets;
      if (last_compute != kNoTask) after.push_back(last_compute);
      sim::LeanTask opt;
      opt.kind = sim::TaskKind::optimizer, opt.stream = compute, opt.precision = plan_.precision;
      opt.bytes = shape_[s].static_memory.model_states();
      const PlanAnalysis& timing = timing_of(s) ? *timing_of(s) : a_;
      if (timing.optimizer_seconds_per_stage > 0) opt.duration_s = timing.optimizer_seconds_per_stage;
      const int optimizer = push(s, opt, after, [] { return std::string("optimizer"); });
      for (int c = 0; c < V; ++c) {
        const auto& syncs = layout_.work[s][c].param_syncs;
        for (size_t j = 0; j < syncs.size(); ++j) {
          if (trivial(syncs[j])) continue;
          push(s, collective(s, "comm_dp", syncs[j]), {optimizer}, [&] { return fmt::format("param_gather.{}.{}", c, j); });
        }
      }
    }
  }

  void emit_buckets(int stage, int chunk, const Ids& ends, Ids& ids) {
    const ChunkWork& w = layout_.work[stage][chunk];
    for (size_t k = 0; k < w.buckets.size(); ++k) {
      for (size_t j = 0; j < w.buckets[k].syncs.size(); ++j) {
        const CommOp& op = w.buckets[k].syncs[j];
        if (trivial(op)) continue;
        Ids deps;
        if (ends[k] != kNoTask) deps.push_back(ends[k]);
        ids.push_back(push(stage, collective(stage, "comm_dp", op), deps,
                           [&] { return fmt::format("grad.{}.{}.{}", chunk, k, j); }));
      }
    }
  }

  // Receives go last: on each receiver, one stream per sending stage, in the sender's order,
  // so the k-th send from A to B meets the k-th receive in B from A. Then the dependencies on
  // them (placeholders until now) take their indices.
  void add_receives() {
    const int keys = 2 * plan_.micro_batches * layout_.chunks;
    std::vector<std::vector<int>> recv_task(classes_.size(), std::vector<int>(keys, kNoTask));
    for (const auto& [key, channel] : channels_) {
      const auto [from, to] = key;
      sim::LeanTask t;
      t.kind = sim::TaskKind::recv;
      t.stream = classes_[to].stream_index(fmt::format("p2p_recv.{}", stage_class_name(from)));
      t.peer = from;
      for (const auto& [recv, bytes] : channel.recvs) {
        t.bytes = bytes;
        recv_task[to].at(recv) = push(to, t, {}, [&] { return recv_id(recv); });
      }
    }
    for (std::size_t c = 0; c < classes_.size(); ++c)
      for (int& d : classes_[c].deps) {
        if (d >= 0) continue;
        const int recv = -1 - d;
        d = recv < keys ? recv_task[c][recv] : kNoTask;
        if (d == kNoTask)
          throw std::logic_error(fmt::format("lowering: stage {} waits for {}, which no stage sends", c, recv_id(recv)));
      }
  }

  const PlanAnalysis& a_;
  const Plan& plan_;
  const hardware::DeviceMesh& mesh_;
  const LoweringOptions& options_;
  const bool named_;  // keep the task ids (the text program's)
  StageLayout layout_;
  std::map<const PlanAnalysis*, StageLayout> timed_layouts_;  // per LoweringOptions::stage_timing analysis
  std::vector<sim::RankClass> shape_;  // names, ranks, static memory
  std::vector<sim::LeanClass> classes_;
  std::map<std::pair<int, int>, Channel> channels_;
};

void check_devices(const hardware::Cluster& cluster, const hardware::DeviceMesh& mesh) {
  if (mesh.num_devices() != cluster.num_devices())
    throw std::runtime_error(fmt::format("lowering: the plan's mesh has {} devices but cluster '{}' has {}",
                                         mesh.num_devices(), cluster.name, cluster.num_devices()));
}

}  // namespace

std::string stage_class_name(int stage) { return fmt::format("stage{}", stage); }

sim::Program lower_plan(const PlanAnalysis& analysis, const Plan& plan, const hardware::Cluster& cluster,
                        const hardware::DeviceMesh& mesh, const LoweringOptions& options) {
  check_devices(cluster, mesh);
  return sim::to_program(Lowerer(analysis, plan, mesh, options, true).run());
}

sim::LeanProgram lower_plan_lean(const PlanAnalysis& analysis, const Plan& plan, const hardware::Cluster& cluster,
                                 const hardware::DeviceMesh& mesh, const LoweringOptions& options) {
  check_devices(cluster, mesh);
  return Lowerer(analysis, plan, mesh, options, false).run();
}

}  // namespace symtensor::compiler
