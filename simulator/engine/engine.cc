#include "simulator/engine/engine.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "simulator/program/validate.h"

namespace symtensor::sim {

namespace {

std::vector<double> level_bandwidths(const hardware::Cluster& cluster) {
  std::vector<double> bw;
  for (const auto& level : cluster.levels) bw.push_back(level.bandwidth);
  return bw;
}

int num_entities(const Program& program, SimMode mode) {
  return mode == SimMode::full ? program.num_ranks() : static_cast<int>(program.rank_classes.size());
}

// A mixed fleet: each simulated entity's links are those of its group (the slowest of its
// class's groups in symmetric mode).
Network make_network(const Program& program, const hardware::Cluster& cluster, SimMode mode) {
  const int n = num_entities(program, mode);
  if (!cluster.mixed()) return Network(n, level_bandwidths(cluster));
  std::vector<std::vector<double>> bandwidth(n);
  for (int e = 0; e < n; ++e) {
    const std::vector<int> ranks = mode == SimMode::full ? std::vector<int>{e} : program.rank_classes[e].ranks;
    for (std::size_t l = 0; l < cluster.levels.size(); ++l) {
      double least = std::numeric_limits<double>::infinity();
      for (int g : device_groups_of(cluster, ranks)) least = std::min(least, cluster.groups[g].levels[l].bandwidth);
      bandwidth[e].push_back(least);
    }
  }
  return Network(bandwidth);
}

CompiledProgram checked_compile(const Program& program, const hardware::Cluster& cluster, bool trusted) {
  // Programs built in code have not been through program_from_json; a trusted one is valid by
  // construction.
  const ProgramIndex index = trusted ? index_program(program) : validate_program_indexed(program);
  validate_against_cluster(program, cluster);
  return compile_program(program, cluster, index);
}

}  // namespace

Engine::Engine(const Program& program, const hardware::Cluster& cluster, const SimOptions& options)
    : Engine(program, checked_compile(program, cluster, options.trusted_program), cluster, options) {}

Engine::Engine(const Program& program, CompiledProgram compiled, const hardware::Cluster& cluster,
               const SimOptions& options)
    : program_(program),
      cluster_(cluster),
      options_(options),
      compiled_(std::move(compiled)),
      network_(make_network(program, cluster, options.mode)) {
  if (options.mode == SimMode::symmetric) check_symmetry(program, compiled_);
  int n = num_entities(program, options.mode);
  entities_.resize(n);
  for (int e = 0; e < n; ++e) {
    EntityState& st = entities_[e];
    st.rank_class = options.mode == SimMode::full ? compiled_.class_of_rank[e] : e;
    st.rank = options.mode == SimMode::full ? e : program.rank_classes[e].ranks.front();
    const CompiledClass& cc = compiled_.classes[st.rank_class];
    size_t m = cc.task_stream.size();
    st.deps_left = cc.dep_count;
    st.start.assign(m, 0);
    st.end.assign(m, 0);
    st.started.assign(m, 0);
    st.done.assign(m, 0);
    st.data_arrived.assign(m, 0);
    st.stream_head.assign(cc.streams.size(), 0);
    st.stream_busy.assign(cc.streams.size(), 0);
    st.peak_bytes = program.rank_classes[st.rank_class].static_memory.total();
    st.memory.push_back({0, st.peak_bytes, "static"});
    st.groups.assign(cc.groups.size(), {});
    if (cluster.mixed())
      st.device_group = options.mode == SimMode::full ? cluster.group_of_rank(st.rank)
                        : cc.device_groups.size() == 1 ? cc.device_groups.front() : -1;
  }
}

double Engine::group_link_cap(int src, int dst, int level) const {
  const int a = entities_[src].device_group, b = entities_[dst].device_group;
  if (a < 0 || b < 0 || a == b || level + 1 != static_cast<int>(cluster_.levels.size()))
    return std::numeric_limits<double>::infinity();
  const hardware::GroupLink* link = cluster_.link_between(a, b);
  return link && link->stated ? link->bandwidth : std::numeric_limits<double>::infinity();
}

int Engine::entity_of_rank(int rank) const {
  return options_.mode == SimMode::full ? rank : compiled_.class_of_rank[rank];
}

void Engine::try_start(int entity, int stream, double now) {
  EntityState& st = entities_[entity];
  if (st.stream_busy[stream]) return;
  const auto& list = compiled_.classes[st.rank_class].stream_tasks[stream];
  if (st.stream_head[stream] >= static_cast<int>(list.size())) return;
  int task = list[st.stream_head[stream]];
  if (st.deps_left[task] > 0) return;
  st.stream_busy[stream] = 1;
  start_task(entity, task, now);
}

void Engine::start_task(int entity, int task, double now) {
  EntityState& st = entities_[entity];
  const CompiledClass& cc = compiled_.classes[st.rank_class];
  const TaskKind kind = cc.kind[task];
  st.started[task] = 1;
  st.start[task] = now;
  switch (kind) {
    case TaskKind::compute:
    case TaskKind::optimizer:
      queue_.push({now + cc.duration_s[task], 0, EventKind::task_done, entity, task});
      break;
    case TaskKind::alloc:
    case TaskKind::free: {
      const double bytes = cc.bytes[task];
      st.live_bytes += kind == TaskKind::alloc ? bytes : -bytes;
      if (st.live_bytes < -1e-6 * std::max(1.0, bytes))
        throw std::runtime_error(fmt::format("rank class '{}' task '{}': frees {} bytes more than are allocated",
                                             program_.rank_classes[st.rank_class].name,
                                             task_name(program_, st.rank_class, task), -st.live_bytes));
      double in_use = program_.rank_classes[st.rank_class].static_memory.total() + st.live_bytes;
      st.peak_bytes = std::max(st.peak_bytes, in_use);
      st.memory.push_back({now, in_use, cc.tag[task] >= 0 ? cc.tags[cc.tag[task]] : std::string()});
      queue_.push({now, 0, EventKind::task_done, entity, task});
      break;
    }
    case TaskKind::collective: arrive_collective(entity, task, now); break;
    case TaskKind::send: start_send(entity, task, now); break;
    case TaskKind::recv:
      if (st.data_arrived[task]) queue_.push({now, 0, EventKind::task_done, entity, task});
      break;
  }
}

void Engine::finish_task(int entity, int task, double now) {
  EntityState& st = entities_[entity];
  const CompiledClass& cc = compiled_.classes[st.rank_class];
  st.done[task] = 1;
  st.end[task] = now;
  int stream = cc.task_stream[task];
  st.stream_busy[stream] = 0;
  ++st.stream_head[stream];
  for (int d : cc.dependents(task))
    if (--st.deps_left[d] == 0) try_start(entity, cc.task_stream[d], now);
  try_start(entity, stream, now);
}

SimResult Engine::run() {
  for (size_t e = 0; e < entities_.size(); ++e)
    for (size_t s = 0; s < entities_[e].stream_head.size(); ++s) try_start(static_cast<int>(e), static_cast<int>(s), 0);
  while (!queue_.empty()) {
    Event e = queue_.pop();
    now_ = e.time;
    switch (e.kind) {
      case EventKind::task_done: finish_task(e.a, e.b, e.time); break;
      case EventKind::latency_done: on_latency_done(e); break;
      case EventKind::flow_done: on_flow_done(e); break;
    }
  }
  for (const auto& st : entities_)
    for (char d : st.done)
      if (!d) report_stall(now_);
  return build_result();
}

void Engine::report_stall(double now) const {
  for (const auto& st : entities_) {
    const CompiledClass& cc = compiled_.classes[st.rank_class];
    const RankClass& rc = program_.rank_classes[st.rank_class];
    for (size_t s = 0; s < cc.streams.size(); ++s) {
      if (st.stream_head[s] >= static_cast<int>(cc.stream_tasks[s].size())) continue;
      int task = cc.stream_tasks[s][st.stream_head[s]];
      const int c = st.rank_class;
      std::string why;
      if (st.deps_left[task] > 0) {
        if (task < static_cast<int>(rc.tasks.size())) {
          for (const auto& d : rc.tasks[task].deps)
            for (size_t i = 0; i < rc.tasks.size() && why.empty(); ++i)
              if (rc.tasks[i].id == d && !st.done[i]) why = fmt::format("waits for task '{}'", d);
        }
        for (size_t i = 0; i < cc.kind.size() && why.empty(); ++i) {  // a program without task ids
          const auto dependents = cc.dependents(static_cast<int>(i));
          if (!st.done[i] && std::find(dependents.begin(), dependents.end(), task) != dependents.end())
            why = fmt::format("waits for task '{}'", task_name(program_, c, static_cast<int>(i)));
        }
      } else if (cc.kind[task] == TaskKind::collective) {
        why = "waits for the other members of its group";
      } else if (cc.kind[task] == TaskKind::recv) {
        why = fmt::format("waits for data from rank class '{}'", program_.rank_classes[cc.peer_class[task]].name);
      } else {
        why = "never finished";
      }
      throw std::runtime_error(fmt::format("simulation deadlocked at t={:.6g} s: rank class '{}' (rank {}) task '{}' "
                                           "on stream '{}' {}",
                                           now, rc.name, st.rank, task_name(program_, c, task), cc.streams[s], why));
    }
  }
  throw std::logic_error("simulation stalled without a blocked stream");
}

SimResult simulate(const Program& program, const hardware::Cluster& cluster, const SimOptions& options) {
  Engine engine(program, cluster, options);
  return engine.run();
}

SimResult simulate(LeanProgram program, const hardware::Cluster& cluster, const SimOptions& options) {
  validate_against_cluster(program.shape, cluster);
  CompiledProgram compiled = compile_program(program, cluster);
  std::vector<LeanClass>().swap(program.classes);
  Engine engine(program.shape, std::move(compiled), cluster, options);
  return engine.run();
}

}  // namespace symtensor::sim
