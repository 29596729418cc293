#include "compiler/lowering/lower_plan.h"

#include <limits>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "compiler/cost/interleaved_pipeline.h"
#include "compiler/plan/pipeline_order.h"
#include "compiler/plan/batch_shares.h"
#include "simulator/program/mesh_groups.h"

namespace symtensor::compiler {
namespace {

// Tasks by index in their class. A dependency on a receive not yet added (receives go last,
// add_receives) is a placeholder, -1 - its key, resolved once they are there.
using Ids = std::vector<int>;
constexpr int kNoTask = std::numeric_limits<int>::min();

class Lowerer {
 public:
  Lowerer(const PlanAnalysis& a, const Plan& plan, const hardware::Cluster& cluster, const hardware::DeviceMesh& mesh,
          const LoweringOptions& options, bool named)
      : a_(a), plan_(plan), cluster_(cluster), mesh_(mesh), options_(options), named_(named),
        layout_(build_stage_layout(a, plan, options)) {
    if (const std::string problem = batch_shares_problem(plan, cluster); !problem.empty())
      throw std::runtime_error("lowering: batch.group_micro_batches: " + problem);
    // The stages (or groups) timed by an analysis on their own device: that analysis's layout, one per analysis.
    std::vector<const PlanAnalysis*> timings = options.stage_timing;
    timings.insert(timings.end(), options.group_timing.begin(), options.group_timing.end());
    for (const PlanAnalysis* timing : timings) {
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
    assign_ranks();
    for (std::size_t c = 0; c < specs_.size(); ++c) lower_class(static_cast<int>(c));
    add_receives();
    prog.shape.rank_classes = std::move(shape_);
    prog.classes = std::move(classes_);
    return prog;
  }

 private:
  struct Channel {
    std::vector<std::pair<int, double>> recvs;  // the receiver's receive keys, in the sender's order
  };
  // A rank class: a pipeline stage's ranks, or under batch shares its ranks in one group of
  // the fleet, which run that group's count of micro-batches.
  struct ClassSpec {
    int stage = 0;
    int group = -1;  // -1: the stage's ranks in every group
    int micro_batches = 1;
  };

  void assign_ranks() {
    const int n = mesh_.num_devices();
    const int axis = plan_.pipeline_axis;
    if (axis >= static_cast<int>(mesh_.axes().size()))
      throw std::runtime_error(fmt::format("lowering: pipeline axis {} is not a mesh axis", axis));
    if (axis >= 0 && mesh_.axes()[axis].size != layout_.stages)
      throw std::runtime_error(fmt::format("lowering: pipeline axis '{}' has size {} but the plan has {} stages",
                                           mesh_.axes()[axis].name, mesh_.axes()[axis].size, layout_.stages));
    auto stage_of = [&](int r) { return axis >= 0 ? (r / mesh_.axes()[axis].stride) % mesh_.axes()[axis].size : 0; };
    const bool shares = !plan_.group_micro_batches.empty();
    const int groups = shares ? static_cast<int>(cluster_.groups.size()) : 1;
    // Class of (stage, group): under shares, one per group holding some of the stage's ranks.
    class_of_.assign(layout_.stages, std::vector<int>(groups, -1));
    std::vector<int> rank_class(n);
    for (int r = 0; r < n; ++r) {
      const int s = stage_of(r), g = shares ? cluster_.group_of_rank(r) : 0;
      rank_class[r] = g;
      if (shares && s + 1 < layout_.stages && cluster_.group_of_rank(r + mesh_.axes()[axis].stride) != g)
        throw std::runtime_error(fmt::format("lowering: batch shares need each pipeline inside one group, but rank {} "
                                             "(group {}) sends to rank {} (group {})",
                                             r, g + 1, r + mesh_.axes()[axis].stride,
                                             cluster_.group_of_rank(r + mesh_.axes()[axis].stride) + 1));
    }
    for (int s = 0; s < layout_.stages; ++s)
      for (int g = 0; g < groups; ++g)
        for (int r = 0; r < n; ++r)
          if (stage_of(r) == s && rank_class[r] == g) {
            class_of_[s][g] = static_cast<int>(specs_.size());
            specs_.push_back({s, shares ? g : -1, shares ? plan_.group_micro_batches[g] : plan_.micro_batches});
            break;
          }
    shape_.resize(specs_.size());
    classes_.resize(specs_.size());
    for (std::size_t c = 0; c < specs_.size(); ++c) {
      const int s = specs_[c].stage;
      shape_[c].name = specs_[c].group < 0 ? stage_class_name(s)
                                           : fmt::format("{}.{}", stage_class_name(s), cluster_.groups[specs_[c].group].profile);
      if (s < static_cast<int>(a_.stage_memory.size())) {
        const StageMemory& m = a_.stage_memory[s];
        shape_[c].static_memory = {m.parameters, m.gradients, m.optimizer,
                                   m.working_buffers + m.collective_buffers + m.reserve};
      }
    }
    for (int r = 0; r < n; ++r) shape_[class_of_[stage_of(r)][rank_class[r]]].ranks.push_back(r);
  }

  // Whether the group of `axes` around class c's ranks lies inside the class (else it spans
  // the classes of several groups: a data-parallel reduction under batch shares).
  bool inside(int c, const std::vector<int>& axes) {
    auto [it, fresh] = inside_.try_emplace({c, axes}, true);
    if (!fresh) return it->second;
    const std::vector<int>& ranks = shape_[c].ranks;
    for (int r : ranks)
      for (int member : sim::group_of(mesh_.axes(), r, axes))
        if (!std::binary_search(ranks.begin(), ranks.end(), member)) return it->second = false;
    return true;
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

  // The analysis timing class c (LoweringOptions::stage_timing, or group_timing for a group's
  // class), nullptr when it is the lowered one.
  const PlanAnalysis* timing_of(int c) const {
    const ClassSpec& spec = specs_[c];
    const std::vector<const PlanAnalysis*>& by = spec.group >= 0 ? options_.group_timing : options_.stage_timing;
    const int i = spec.group >= 0 ? spec.group : spec.stage;
    if (i >= static_cast<int>(by.size())) return nullptr;
    const PlanAnalysis* timing = by[i];
    return timing == &a_ ? nullptr : timing;
  }
  // Class c's chunk work as its timing analysis prices it (nullptr: as the lowered one).
  const ChunkWork* timed_work(int c, int chunk) const {
    const PlanAnalysis* timing = timing_of(c);
    return timing ? &timed_layouts_.at(timing).work[specs_[c].stage][chunk] : nullptr;
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
  // `per_step`: a collective run once a step (gradient buckets, parameter gathers), which may
  // span the classes of several groups (each runs it once); a per-micro-batch one may not
  // where the groups run different counts.
  sim::LeanTask collective(int s, std::string_view stream, const CommOp& op, bool per_step = false) {
    sim::LeanTask t;
    t.kind = sim::TaskKind::collective;
    t.stream = classes_[s].stream_index(stream);
    t.collective = op.kind;
    t.bytes = op.bytes;
    t.group = group_of(s, op);
    if (specs_[s].group >= 0 && !inside(s, op.axes)) {
      if (!per_step)
        throw std::runtime_error(fmt::format("lowering: batch shares: a collective of every micro-batch (tensor #{}) "
                                             "spans the groups, which run different micro-batch counts",
                                             op.tensor));
      t.shared = shared_[s]++;
    }
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
    return stage_send_bytes(b, boundary % layout_.stages);
  }

  // Stage `from`'s send (its id kind/mb/chunk) to stage `to`, where receive `key` meets it.
  void send(int from, int to_stage, char kind, int mb, int chunk, int key, double bytes, const Ids& deps) {
    const int to = class_of_[to_stage][std::max(specs_[from].group, 0)];
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
  std::size_t expected_tasks(int c, const std::vector<PipelineUnit>& units) const {
    const int s = specs_[c].stage;
    std::size_t n = 1;  // the optimizer
    for (const PipelineUnit& u : units) {
      const ChunkWork& w = layout_.work[s][u.chunk];
      n += 3 + (u.forward ? w.forward.size() : w.recompute.size() + w.backward.size());  // + alloc/free, send, recv
    }
    for (const ChunkWork& w : layout_.work[s]) {
      n += w.param_syncs.size();
      for (const GradBucket& b : w.buckets) n += b.syncs.size() * (w.every_micro_batch_syncs ? specs_[c].micro_batches : 1);
    }
    return n;
  }

  // Class c's program: its stage's work over its micro-batches (index c: the class's; s: its stage's).
  void lower_class(int c) {
    const int s = specs_[c].stage;
    sim::LeanClass& lc = classes_[c];
    const int P = layout_.stages, V = layout_.chunks, m = specs_[c].micro_batches;
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
    const std::size_t expected = expected_tasks(c, units);
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
          deps.push_back(push(c, t, {}, [&] { return unit_id('a', mb, chunk); }));
        }
        if (v > 0) deps.push_back(-1 - recv_key(false, mb, chunk));
        const ChunkWork* tw = timed_work(c, chunk);
        deps = emit_chain(c, w.forward, 'f', mb, chunk, std::move(deps), tw ? &tw->forward : nullptr);
        if (v < last_virtual) {
          const int to = (v + 1) % P, to_chunk = (v + 1) / P;
          send(c, to, 'S', mb, chunk, recv_key(false, mb, to_chunk), p2p_bytes(v), deps);
        }
        if (training) forward_end[{mb, chunk}] = deps;
        continue;
      }
      Ids deps = forward_end[{mb, chunk}];
      if (v < last_virtual) deps.push_back(-1 - recv_key(true, mb, chunk));
      const ChunkWork* tw = timed_work(c, chunk);
      deps = emit_chain(c, w.recompute, 'r', mb, chunk, std::move(deps), tw ? &tw->recompute : nullptr);
      deps = emit_chain(c, w.backward, 'b', mb, chunk, std::move(deps), tw ? &tw->backward : nullptr, &backward_tasks);
      if (w.saved_bytes > 0) {
        sim::LeanTask t;
        t.kind = sim::TaskKind::free, t.stream = compute, t.bytes = w.saved_bytes, t.tag = tag(mb, chunk);
        push(c, t, deps, [&] { return unit_id('d', mb, chunk); });
      }
      if (v > 0) {
        const int to = (v - 1 + P) % P, to_chunk = (v - 1) / P;
        send(c, to, 'B', mb, chunk, recv_key(true, mb, to_chunk), p2p_bytes(v - 1), deps);
      }
      if (!deps.empty()) last_compute = deps.front();
      if (training && (mb == m - 1 || w.every_micro_batch_syncs)) {
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
        // ZeRO-2/3's reduce-scatters follow each micro-batch's backward as its buckets fill,
        // with overlap or without; the rest waits for the last micro-batch.
        if (mb < m - 1) emit_buckets(c, chunk, ends, buckets, mb, true);
        else if (options_.overlap_grad_sync) emit_buckets(c, chunk, ends, buckets, mb);
        else {
          emit_buckets(c, chunk, ends, buckets, mb, true);
          deferred.emplace_back(chunk, ends);
        }
      }
    }
    if (training) {
      for (auto& [chunk, ends] : deferred) {
        for (auto& e : ends) e = last_compute;
        emit_buckets(c, chunk, ends, buckets, m - 1, false, true);
      }
      Ids after = buckets;
      if (last_compute != kNoTask) after.push_back(last_compute);
      sim::LeanTask opt;
      opt.kind = sim::TaskKind::optimizer, opt.stream = compute, opt.precision = plan_.precision;
      opt.bytes = shape_[c].static_memory.model_states();
      const PlanAnalysis& timing = timing_of(c) ? *timing_of(c) : a_;
      if (timing.optimizer_seconds_per_stage > 0) opt.duration_s = timing.optimizer_seconds_per_stage;
      const int optimizer = push(c, opt, after, [] { return std::string("optimizer"); });
      for (int k = 0; k < V; ++k) {
        const auto& syncs = layout_.work[s][k].param_syncs;
        for (size_t j = 0; j < syncs.size(); ++j) {
          if (trivial(syncs[j])) continue;
          push(c, collective(c, "comm_dp", syncs[j], true), {optimizer},
               [&] { return fmt::format("param_gather.{}.{}", k, j); });
        }
      }
    }
  }

  // The gradient buckets' collectives of micro-batch `mb` of `chunk`, each after its end:
  // those run every micro-batch only (`every_only`), those run once a step only (`once_only`),
  // or both.
  void emit_buckets(int c, int chunk, const Ids& ends, Ids& ids, int mb, bool every_only = false, bool once_only = false) {
    const ChunkWork& w = layout_.work[specs_[c].stage][chunk];
    for (size_t k = 0; k < w.buckets.size(); ++k) {
      for (size_t j = 0; j < w.buckets[k].syncs.size(); ++j) {
        const CommOp& op = w.buckets[k].syncs[j];
        if (trivial(op) || (every_only && !op.every_micro_batch) || (once_only && op.every_micro_batch)) continue;
        Ids deps;
        if (ends[k] != kNoTask) deps.push_back(ends[k]);
        ids.push_back(push(c, collective(c, "comm_dp", op, !op.every_micro_batch), deps, [&] {
          return op.every_micro_batch ? fmt::format("grad.{}.{}.{}.mb{}", chunk, k, j, mb) : fmt::format("grad.{}.{}.{}", chunk, k, j);
        }));
      }
    }
  }

  // Receives go last: on each receiver, one stream per sending stage, in the sender's order,
  // so the k-th send from A to B meets the k-th receive in B from A. Then the dependencies on
  // them (placeholders until now) take their indices.
  void add_receives() {
    int most = 1;
    for (const ClassSpec& spec : specs_) most = std::max(most, spec.micro_batches);
    const int keys = 2 * most * layout_.chunks;
    std::vector<std::vector<int>> recv_task(classes_.size(), std::vector<int>(keys, kNoTask));
    for (const auto& [key, channel] : channels_) {
      const auto [from, to] = key;
      sim::LeanTask t;
      t.kind = sim::TaskKind::recv;
      t.stream = classes_[to].stream_index(fmt::format("p2p_recv.{}", shape_[from].name));
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
          throw std::logic_error(
              fmt::format("lowering: class {} waits for {}, which no stage sends", shape_[c].name, recv_id(recv)));
      }
  }

  const PlanAnalysis& a_;
  const Plan& plan_;
  const hardware::Cluster& cluster_;
  const hardware::DeviceMesh& mesh_;
  const LoweringOptions& options_;
  const bool named_;  // keep the task ids (the text program's)
  StageLayout layout_;
  std::map<const PlanAnalysis*, StageLayout> timed_layouts_;  // per LoweringOptions::stage_timing analysis
  std::vector<ClassSpec> specs_;       // per rank class
  std::vector<std::vector<int>> class_of_;  // [stage][group] -> class (group 0 without shares)
  std::map<std::pair<int, std::vector<int>>, bool> inside_;  // (class, axes) -> the group lies in the class
  std::map<int, int> shared_;          // per class: the cross-class collectives it has emitted (their keys)
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
  return sim::to_program(Lowerer(analysis, plan, cluster, mesh, options, true).run());
}

sim::LeanProgram lower_plan_lean(const PlanAnalysis& analysis, const Plan& plan, const hardware::Cluster& cluster,
                                 const hardware::DeviceMesh& mesh, const LoweringOptions& options) {
  check_devices(cluster, mesh);
  return Lowerer(analysis, plan, cluster, mesh, options, false).run();
}

}  // namespace symtensor::compiler
