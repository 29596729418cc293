#include "simulator/engine/compiled_program.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "simulator/program/mesh_groups.h"

namespace symtensor::sim {

double compute_duration(const hardware::Device& device, const Task& task) {
  if (task.duration_s) return *task.duration_s;
  return device.kernel_seconds(task.precision, task.flops, task.bytes);
}

double compute_duration(const hardware::Cluster& cluster, const std::vector<int>& device_groups, const Task& task) {
  if (device_groups.empty()) return compute_duration(cluster.device, task);
  double longest = 0;
  for (int g : device_groups) longest = std::max(longest, compute_duration(cluster.groups[g].device, task));
  return longest;
}

double usable_memory(const hardware::Cluster& cluster, const std::vector<int>& device_groups) {
  if (device_groups.empty()) return cluster.device.usable_memory();
  double least = cluster.groups[device_groups.front()].device.usable_memory();
  for (int g : device_groups) least = std::min(least, cluster.groups[g].device.usable_memory());
  return least;
}

std::vector<int> device_groups_of(const hardware::Cluster& cluster, const std::vector<int>& ranks) {
  std::vector<int> groups;
  if (!cluster.mixed()) return groups;
  for (int r : ranks) {
    const int g = cluster.group_of_rank(r);
    if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
  }
  std::sort(groups.begin(), groups.end());
  return groups;
}

CompiledProgram compile_program(const Program& program, const hardware::Cluster& cluster) {
  return compile_program(program, cluster, index_program(program));
}

namespace {

// The parts both forms compile alike: levels, each rank's class, each class's rank positions
// and device groups.
CompiledProgram compiled_shape(const Program& program, const hardware::Cluster& cluster) {
  CompiledProgram out;
  out.num_levels = static_cast<int>(cluster.levels.size());
  const int n = program.num_ranks();
  out.class_of_rank.assign(n, -1);
  out.classes.resize(program.rank_classes.size());
  for (size_t c = 0; c < program.rank_classes.size(); ++c)
    for (int r : program.rank_classes[c].ranks) out.class_of_rank[r] = static_cast<int>(c);
  for (size_t c = 0; c < program.rank_classes.size(); ++c) {
    const RankClass& rc = program.rank_classes[c];
    CompiledClass& cc = out.classes[c];
    cc.rank_position.assign(n, -1);
    cc.device_groups = device_groups_of(cluster, rc.ranks);
    for (size_t i = 0; i < rc.ranks.size(); ++i) cc.rank_position[rc.ranks[i]] = static_cast<int>(i);
  }
  return out;
}

// Per-task arrays sized for m tasks, at their defaults.
void size_tasks(CompiledClass& cc, size_t m) {
  cc.task_stream.resize(m);
  cc.dep_count.assign(m, 0);
  cc.duration_s.assign(m, 0);
  cc.collective_id.assign(m, -1);
  cc.group.assign(m, -1);
  cc.peer_class.assign(m, -1);
  cc.matched_recv.assign(m, -1);
  cc.kind.resize(m);
  cc.bytes.resize(m);
  cc.collective.resize(m);
  cc.algorithm.resize(m);
  cc.tag.assign(m, -1);
}

// Dependents packed by task (counting sort on the dependency, program order kept) from each
// task's dependencies' indices, flat in program order (dep_count set).
void pack_dependents(CompiledClass& cc, const std::vector<int>& targets) {
  const size_t m = cc.dep_count.size();
  std::vector<int>& start = cc.dependent_start;
  start.assign(m + 1, 0);
  for (int d : targets) ++start[d + 1];
  for (size_t i = 0; i < m; ++i) start[i + 1] += start[i];
  cc.dependent_list.resize(targets.size());
  std::size_t k = 0;
  // start[t] serves as task t's cursor, ending at start[t + 1]; shifted back after.
  for (size_t i = 0; i < m; ++i)
    for (int d = 0; d < cc.dep_count[i]; ++d) cc.dependent_list[start[targets[k++]]++] = static_cast<int>(i);
  for (size_t i = m; i > 0; --i) start[i] = start[i - 1];
  start[0] = 0;
}

// The k-th send from class A to B meets the k-th recv in B from A.
void match_sends(CompiledProgram& out) {
  std::map<std::pair<int, int>, std::vector<int>> recvs;  // (from class, to class) -> recvs in order
  for (size_t c = 0; c < out.classes.size(); ++c) {
    const CompiledClass& cc = out.classes[c];
    for (size_t i = 0; i < cc.kind.size(); ++i)
      if (cc.kind[i] == TaskKind::recv) recvs[{cc.peer_class[i], static_cast<int>(c)}].push_back(static_cast<int>(i));
  }
  for (size_t c = 0; c < out.classes.size(); ++c) {
    std::map<int, int> sent_to;  // peer class -> sends so far
    CompiledClass& cc = out.classes[c];
    for (size_t i = 0; i < cc.kind.size(); ++i) {
      if (cc.kind[i] != TaskKind::send) continue;
      int peer = cc.peer_class[i];
      cc.matched_recv[i] = recvs.at({static_cast<int>(c), peer}).at(sent_to[peer]++);
    }
  }
}

// Whether every member of the group of `axes` around each rank of class c is in class c.
bool group_inside(const Program& program, const CompiledProgram& out, int c, const std::vector<int>& axes) {
  if (std::any_of(axes.begin(), axes.end(), [](int a) { return a < 0; })) return false;  // unknown axis: by name
  for (int r : program.rank_classes[c].ranks)
    for (int member : group_of(program.mesh, r, axes))
      if (out.class_of_rank[member] != c) return false;
  return true;
}

}  // namespace

CompiledProgram compile_program(const Program& program, const hardware::Cluster& cluster,
                                const ProgramIndex& index) {
  CompiledProgram out = compiled_shape(program, cluster);
  std::unordered_map<std::string, int> class_index;
  // A collective whose group spans several classes matches their tasks of the same id: the id
  // names its shared id (keys point into the program's task ids). One whose group lies inside
  // its class, as a lowered plan's all do (its tensor- and data-parallel groups are a stage's
  // ranks), meets only its own class's task: a fresh id each, without hashing the name (a
  // step program has hundreds of thousands of collectives).
  TaskIndex collective_ids;
  int next_collective = 0;
  for (size_t c = 0; c < program.rank_classes.size(); ++c) class_index[program.rank_classes[c].name] = static_cast<int>(c);
  for (size_t c = 0; c < program.rank_classes.size(); ++c) {
    const RankClass& rc = program.rank_classes[c];
    CompiledClass& cc = out.classes[c];
    size_t m = rc.tasks.size();
    size_tasks(cc, m);
    std::map<std::vector<int>, int> group_index;
    std::vector<int> axes;
    std::vector<char> inside;                   // per group of the class: every member rank is in the class
    const std::vector<std::string>* last = nullptr;  // the group of the class's last collective ...
    int last_group = -1;                        // ... and its index
    bool has_compute = std::any_of(rc.tasks.begin(), rc.tasks.end(), [](const Task& t) { return t.stream == kComputeStream; });
    if (has_compute) {
      cc.streams.emplace_back(kComputeStream);
      cc.stream_tasks.emplace_back();
    }
    for (size_t i = 0; i < m; ++i) {
      const Task& t = rc.tasks[i];
      // A class has a handful of streams: found by comparison, not hashing.
      const auto found = std::find(cc.streams.begin(), cc.streams.end(), t.stream);
      const int stream = static_cast<int>(found - cc.streams.begin());
      if (found == cc.streams.end()) {
        cc.streams.push_back(t.stream);
        cc.stream_tasks.emplace_back();
      }
      cc.task_stream[i] = stream;
      cc.stream_tasks[stream].push_back(static_cast<int>(i));
      cc.kind[i] = t.kind;
      cc.bytes[i] = t.bytes;
      cc.collective[i] = t.collective;
      cc.algorithm[i] = t.algorithm;
      if (t.kind == TaskKind::alloc || t.kind == TaskKind::free) {
        cc.tag[i] = static_cast<int>(cc.tags.size());
        cc.tags.push_back(t.tag);
      }
      if (t.kind == TaskKind::compute || t.kind == TaskKind::optimizer) {
        try {
          cc.duration_s[i] = compute_duration(cluster, cc.device_groups, t);
        } catch (const std::exception& e) {
          throw std::runtime_error(fmt::format("rank class '{}' task '{}': {}", rc.name, t.id, e.what()));
        }
      }
      if (t.kind == TaskKind::collective) {
        if (!last || *last != t.group) {  // most collectives use their predecessor's group
          axes.clear();
          for (const auto& axis : t.group) axes.push_back(axis_index(program.mesh, axis));
          auto [g, added] = group_index.try_emplace(axes, static_cast<int>(cc.groups.size()));
          if (added) {
            cc.groups.push_back(axes);
            inside.push_back(group_inside(program, out, static_cast<int>(c), axes));
          }
          last = &t.group, last_group = g->second;
        }
        cc.group[i] = last_group;
        if (inside[last_group]) {
          cc.collective_id[i] = next_collective++;
        } else {
          if (collective_ids.size() == 0) collective_ids.reserve(m);
          const auto [e, added] = collective_ids.emplace(t.id, next_collective);
          if (added) ++next_collective;
          cc.collective_id[i] = e->second;
        }
      }
      if (t.kind == TaskKind::send || t.kind == TaskKind::recv) cc.peer_class[i] = class_index.at(t.peer);
    }
    for (size_t i = 0; i < m; ++i) cc.dep_count[i] = static_cast<int>(rc.tasks[i].deps.size());
    pack_dependents(cc, index.deps.at(c));
  }
  match_sends(out);
  return out;
}

CompiledProgram compile_program(const LeanProgram& program, const hardware::Cluster& cluster) {
  const Program& shape = program.shape;
  if (program.classes.size() != shape.rank_classes.size())
    throw std::logic_error("lean program: the task lists do not match the rank classes");
  CompiledProgram out = compiled_shape(shape, cluster);
  int next_collective = 0;
  std::map<int, int> shared_ids;  // LeanTask::shared -> collective id (groups spanning classes)
  for (size_t c = 0; c < program.classes.size(); ++c) {
    const LeanClass& lc = program.classes[c];
    const RankClass& rc = shape.rank_classes[c];
    CompiledClass& cc = out.classes[c];
    const size_t m = lc.tasks.size();
    size_tasks(cc, m);
    // Streams as compile_program numbers them: "compute" first when a task runs there, then
    // by first use; groups by first use.
    std::vector<int> stream_of(lc.streams.size(), -1), group_of_lean(lc.groups.size(), -1);
    std::vector<char> inside;
    const auto compute = std::find(lc.streams.begin(), lc.streams.end(), kComputeStream);
    if (compute != lc.streams.end()) {
      const int k = static_cast<int>(compute - lc.streams.begin());
      if (std::any_of(lc.tasks.begin(), lc.tasks.end(), [k](const LeanTask& t) { return t.stream == k; })) {
        stream_of[k] = 0;
        cc.streams.emplace_back(kComputeStream);
        cc.stream_tasks.emplace_back();
      }
    }
    cc.tags = lc.tags;
    for (size_t i = 0; i < m; ++i) {
      const LeanTask& t = lc.tasks[i];
      int& stream = stream_of.at(t.stream);
      if (stream < 0) {
        stream = static_cast<int>(cc.streams.size());
        cc.streams.push_back(lc.streams[t.stream]);
        cc.stream_tasks.emplace_back();
      }
      cc.task_stream[i] = stream;
      cc.stream_tasks[stream].push_back(static_cast<int>(i));
      cc.kind[i] = t.kind;
      cc.bytes[i] = t.bytes;
      cc.collective[i] = t.collective;
      cc.algorithm[i] = t.algorithm;
      cc.tag[i] = t.tag;
      cc.dep_count[i] = lc.dep_start[i + 1] - lc.dep_start[i];
      if (t.kind == TaskKind::compute || t.kind == TaskKind::optimizer) {
        if (t.duration_s >= 0) {
          cc.duration_s[i] = t.duration_s;
        } else {
          Task priced;
          priced.flops = t.flops, priced.bytes = t.bytes, priced.precision = t.precision;
          if (priced.flops > 0) {
            const auto peak = hardware::peak_precision(t.precision);
            bool missing = !cluster.device.peak_flops.count(peak);
            for (const hardware::DeviceGroup& g : cluster.groups) missing = missing || !g.device.peak_flops.count(peak);
            if (missing)
              throw std::runtime_error(fmt::format("step program: rank class '{}' task #{}: cluster '{}' has no {} peak",
                                                   rc.name, i, cluster.name, hardware::to_string(t.precision)));
          }
          try {
            cc.duration_s[i] = compute_duration(cluster, cc.device_groups, priced);
          } catch (const std::exception& e) {
            throw std::runtime_error(fmt::format("rank class '{}' task #{}: {}", rc.name, i, e.what()));
          }
        }
      }
      if (t.kind == TaskKind::collective) {
        int& g = group_of_lean.at(t.group);
        if (g < 0) {
          g = static_cast<int>(cc.groups.size());
          cc.groups.push_back(lc.groups[t.group]);
          inside.push_back(group_inside(shape, out, static_cast<int>(c), cc.groups.back()));
        }
        cc.group[i] = g;
        if (inside[g]) {
          cc.collective_id[i] = next_collective++;
        } else {
          if (t.shared < 0)
            throw std::runtime_error(fmt::format("lean program: rank class '{}' task #{}: a collective group reaches "
                                                 "past its class without a shared key",
                                                 rc.name, i));
          const auto [e, added] = shared_ids.try_emplace(t.shared, next_collective);
          if (added) ++next_collective;
          cc.collective_id[i] = e->second;
        }
      }
      if (t.kind == TaskKind::send || t.kind == TaskKind::recv) cc.peer_class[i] = t.peer;
    }
    pack_dependents(cc, lc.deps);
  }
  match_sends(out);
  return out;
}

std::string task_name(const Program& program, int rank_class, int task) {
  const RankClass& rc = program.rank_classes[rank_class];
  return task < static_cast<int>(rc.tasks.size()) ? rc.tasks[task].id : fmt::format("#{}", task);
}

void check_symmetry(const Program& program, const CompiledProgram& compiled) {
  for (size_t c = 0; c < program.rank_classes.size(); ++c) {
    const RankClass& rc = program.rank_classes[c];
    const CompiledClass& cc = compiled.classes[c];
    std::map<std::vector<int>, std::string> axis_sets;  // distinct groups -> a task using it
    std::map<int, std::string> peers;
    std::vector<char> group_seen(cc.groups.size(), 0);
    std::vector<char> peer_seen(compiled.classes.size(), 0);
    for (size_t i = 0; i < cc.kind.size(); ++i) {
      const int task = static_cast<int>(i);
      if (cc.kind[i] == TaskKind::collective && !group_seen[cc.group[i]]) {
        group_seen[cc.group[i]] = 1;
        axis_sets.emplace(cc.group_axes(task), task_name(program, static_cast<int>(c), task));
      }
      if ((cc.kind[i] == TaskKind::send || cc.kind[i] == TaskKind::recv) && !peer_seen[cc.peer_class[i]]) {
        peer_seen[cc.peer_class[i]] = 1;
        peers.emplace(cc.peer_class[i], task_name(program, static_cast<int>(c), task));
      }
    }
    auto class_multiset = [&](int rank, const std::vector<int>& axes) {
      std::vector<int> classes;
      for (int m : group_of(program.mesh, rank, axes)) classes.push_back(compiled.class_of_rank[m]);
      std::sort(classes.begin(), classes.end());
      return classes;
    };
    for (const auto& [axes, task] : axis_sets) {
      auto reference = class_multiset(rc.ranks.front(), axes);
      for (int r : rc.ranks)
        if (class_multiset(r, axes) != reference)
          throw std::runtime_error(fmt::format(
              "rank class '{}' task '{}': rank {} has a group with other rank classes than rank {}; the program "
              "is not symmetric, simulate it in full mode", rc.name, task, r, rc.ranks.front()));
    }
    for (const auto& [peer, task] : peers) {
      const auto& other = program.rank_classes[peer].ranks;
      int level = link_level(program.mesh, rc.ranks.front(), other.front());
      for (size_t i = 0; i < rc.ranks.size(); ++i)
        if (link_level(program.mesh, rc.ranks[i], other[i]) != level)
          throw std::runtime_error(fmt::format(
              "rank class '{}' task '{}': rank {} reaches its peer over another level than rank {}; the program is "
              "not symmetric, simulate it in full mode", rc.name, task, rc.ranks[i], rc.ranks.front()));
    }
  }
}

}  // namespace symtensor::sim
