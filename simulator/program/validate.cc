#include "simulator/program/validate.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "simulator/program/mesh_groups.h"

namespace symtensor::sim {

namespace {

[[noreturn]] void fail(const RankClass& rc, const Task& t, const std::string& what) {
  throw std::runtime_error(fmt::format("step program: rank class '{}' task '{}': {}", rc.name, t.id, what));
}

void validate_mesh(const Program& p) {
  if (p.mesh.empty()) throw std::runtime_error("step program: mesh: no axes");
  std::set<std::string> names;
  long long n = 1;
  for (const auto& a : p.mesh) {
    if (a.name.empty()) throw std::runtime_error("step program: mesh: an axis has an empty name");
    if (!names.insert(a.name).second)
      throw std::runtime_error(fmt::format("step program: mesh: axis '{}' appears twice", a.name));
    if (a.size < 1 || a.stride < 1 || a.level < 0)
      throw std::runtime_error(
          fmt::format("step program: mesh axis '{}': size and stride must be >= 1 and level >= 0", a.name));
    n *= a.size;
    if (n > (1 << 24)) throw std::runtime_error("step program: mesh: more than 16M ranks");
  }
  // The strides must map coordinates one-to-one onto 0..n-1.
  std::vector<char> seen(n, 0);
  for (int r = 0; r < n; ++r) {
    long long back = 0;
    for (const auto& a : p.mesh) back += static_cast<long long>(coordinate(a, r)) * a.stride;
    if (back != r || seen[r])
      throw std::runtime_error(
          fmt::format("step program: mesh: axis strides do not number ranks 0..{} one-to-one (rank {})", n - 1, r));
    seen[r] = 1;
  }
}

void validate_classes(const Program& p) {
  int n = p.num_ranks();
  std::vector<int> owner(n, -1);
  std::set<std::string> names;
  for (size_t c = 0; c < p.rank_classes.size(); ++c) {
    const auto& rc = p.rank_classes[c];
    if (rc.name.empty()) throw std::runtime_error(fmt::format("step program: rank class #{} has no name", c));
    if (!names.insert(rc.name).second)
      throw std::runtime_error(fmt::format("step program: rank class '{}' appears twice", rc.name));
    if (rc.ranks.empty()) throw std::runtime_error(fmt::format("step program: rank class '{}': no ranks", rc.name));
    for (int r : rc.ranks) {
      if (r < 0 || r >= n)
        throw std::runtime_error(
            fmt::format("step program: rank class '{}': rank {} outside the mesh (0..{})", rc.name, r, n - 1));
      if (owner[r] >= 0)
        throw std::runtime_error(fmt::format("step program: rank {} is in rank classes '{}' and '{}'", r,
                                             p.rank_classes[owner[r]].name, rc.name));
      owner[r] = static_cast<int>(c);
    }
  }
  for (int r = 0; r < n; ++r)
    if (owner[r] < 0) throw std::runtime_error(fmt::format("step program: rank {} belongs to no rank class", r));
}

void validate_task_fields(const Program& p, const RankClass& rc, const Task& t) {
  if (t.id.empty()) throw std::runtime_error(fmt::format("step program: rank class '{}': a task has no id", rc.name));
  if (t.stream.empty()) fail(rc, t, "no stream");
  bool on_compute = t.stream == kComputeStream;
  bool is_comm = t.kind == TaskKind::collective || t.kind == TaskKind::send || t.kind == TaskKind::recv;
  if ((t.kind == TaskKind::compute || t.kind == TaskKind::optimizer) && !on_compute)
    fail(rc, t, fmt::format("{} tasks run on stream '{}', not '{}'", to_string(t.kind), kComputeStream, t.stream));
  if (is_comm && on_compute)
    fail(rc, t, fmt::format("{} tasks need a communication stream, not '{}'", to_string(t.kind), kComputeStream));
  if (t.kind == TaskKind::collective) {
    if (t.group.empty()) fail(rc, t, "collective with an empty group");
    for (size_t k = 0; k < t.group.size(); ++k) {
      const auto& axis = t.group[k];
      if (axis_index(p.mesh, axis) < 0) fail(rc, t, fmt::format("group axis '{}' is not a mesh axis", axis));
      if (std::find(t.group.begin(), t.group.begin() + static_cast<std::ptrdiff_t>(k), axis) != t.group.begin() + static_cast<std::ptrdiff_t>(k))
        fail(rc, t, fmt::format("group axis '{}' listed twice", axis));
    }
  }
  if (t.kind == TaskKind::send || t.kind == TaskKind::recv) {
    const RankClass* peer = p.find_class(t.peer);
    if (!peer) fail(rc, t, fmt::format("unknown peer rank class '{}'", t.peer));
    if (peer == &rc) fail(rc, t, "peer is its own rank class");
    if (peer->ranks.size() != rc.ranks.size())
      fail(rc, t, fmt::format("peer '{}' has {} ranks, this class {}", t.peer, peer->ranks.size(), rc.ranks.size()));
  }
}

// Kahn's algorithm over dependencies plus "previous task on the same stream".
void validate_acyclic(const RankClass& rc, const TaskIndex& index, std::vector<int>& deps) {
  size_t n = rc.tasks.size();
  // Edges (from, to), then packed by `from` (out[start[v] .. start[v+1])).
  std::vector<std::pair<int, int>> edges;
  edges.reserve(2 * n);
  std::vector<int> indegree(n, 0);
  std::vector<std::pair<std::string_view, int>> last_on_stream;
  for (size_t i = 0; i < n; ++i) {
    const Task& t = rc.tasks[i];
    for (const auto& d : t.deps) {
      const int k = find_dependency(rc, index, static_cast<int>(i), d);
      if (k < 0) fail(rc, t, fmt::format("unknown dependency '{}'", d));
      if (k == static_cast<int>(i)) fail(rc, t, "depends on itself");
      deps.push_back(k);
      edges.emplace_back(k, static_cast<int>(i));
      ++indegree[i];
    }
    // A class has a handful of streams: found by comparison, not hashing.
    auto it = std::find_if(last_on_stream.begin(), last_on_stream.end(), [&](const auto& s) { return s.first == t.stream; });
    if (it == last_on_stream.end()) {
      last_on_stream.emplace_back(t.stream, static_cast<int>(i));
    } else {
      edges.emplace_back(it->second, static_cast<int>(i));
      ++indegree[i];
      it->second = static_cast<int>(i);
    }
  }
  std::vector<int> start(n + 1, 0), out(edges.size());
  for (const auto& [from, to] : edges) ++start[from + 1];
  for (size_t i = 0; i < n; ++i) start[i + 1] += start[i];
  {
    std::vector<int> fill(start.begin(), start.end() - 1);
    for (const auto& [from, to] : edges) out[fill[from]++] = to;
  }
  std::vector<int> ready;
  for (size_t i = 0; i < n; ++i)
    if (indegree[i] == 0) ready.push_back(static_cast<int>(i));
  size_t visited = 0;
  while (!ready.empty()) {
    int v = ready.back();
    ready.pop_back();
    ++visited;
    for (int k = start[v]; k < start[v + 1]; ++k)
      if (--indegree[out[k]] == 0) ready.push_back(out[k]);
  }
  if (visited == n) return;
  for (size_t i = 0; i < n; ++i)
    if (indegree[i] > 0)
      fail(rc, rc.tasks[i],
           "dependency cycle (counting stream order: a task cannot wait for a later task of its own stream)");
}

void validate_collective_peers(const Program& p, const std::vector<TaskIndex>& index, const std::vector<int>& owner) {
  std::vector<int> axes;
  std::vector<std::pair<int, int>> classes;  // (owner class, a member rank of it), one per class
  for (size_t c = 0; c < p.rank_classes.size(); ++c) {
    const auto& rc = p.rank_classes[c];
    const std::vector<std::string>* last = nullptr;  // the group `classes` holds (most collectives share their predecessor's)
    for (const auto& t : rc.tasks) {
      if (t.kind != TaskKind::collective) continue;
      if (!last || *last != t.group) {
        axes.clear();
        for (const auto& a : t.group) axes.push_back(axis_index(p.mesh, a));
        // What is checked depends only on the member's class: one check per class.
        classes.clear();
        for (int member : group_of(p.mesh, rc.ranks.front(), axes))
          if (std::none_of(classes.begin(), classes.end(), [&](const auto& k) { return k.first == owner[member]; }))
            classes.emplace_back(owner[member], member);
        last = &t.group;
      }
      for (const auto& [cls, member] : classes) {
        if (cls == static_cast<int>(c)) continue;  // the task itself (ids are unique in a class)
        const RankClass& other = p.rank_classes[cls];
        auto it = index[cls].find(t.id);
        if (it == index[cls].end())
          fail(rc, t, fmt::format("group member rank {} (class '{}') has no task '{}'", member, other.name, t.id));
        const Task& o = other.tasks[it->second];
        if (o.kind != TaskKind::collective || o.collective != t.collective || o.bytes != t.bytes || o.group != t.group)
          fail(rc, t, fmt::format("differs from task '{}' of rank class '{}' (kind, collective, bytes and group "
                                  "must match)", t.id, other.name));
      }
    }
  }
}

void validate_send_recv(const Program& p) {
  // (from, to) -> bytes of each send / recv in program order
  std::map<std::pair<std::string, std::string>, std::vector<const Task*>> sends, recvs;
  for (const auto& rc : p.rank_classes)
    for (const auto& t : rc.tasks) {
      if (t.kind == TaskKind::send) sends[{rc.name, t.peer}].push_back(&t);
      if (t.kind == TaskKind::recv) recvs[{t.peer, rc.name}].push_back(&t);
    }
  for (const auto& [key, list] : sends) {
    const auto& matching = recvs[key];
    for (size_t k = 0; k < list.size(); ++k) {
      if (k >= matching.size())
        fail(*p.find_class(key.first), *list[k],
             fmt::format("send #{} to '{}' has no matching recv there", k, key.second));
      if (list[k]->bytes != matching[k]->bytes)
        fail(*p.find_class(key.first), *list[k],
             fmt::format("sends {} bytes but the matching recv '{}' expects {}", list[k]->bytes, matching[k]->id,
                         matching[k]->bytes));
    }
  }
  for (const auto& [key, list] : recvs) {
    size_t have = sends.count(key) ? sends[key].size() : 0;
    if (list.size() > have)
      fail(*p.find_class(key.second), *list[have], fmt::format("recv #{} from '{}' has no matching send", have, key.first));
  }
}

}  // namespace

void validate_program(const Program& p) { validate_program_indexed(p); }

ProgramIndex validate_program_indexed(const Program& p) {
  validate_mesh(p);
  validate_classes(p);
  ProgramIndex out;
  out.deps.resize(p.rank_classes.size());
  std::vector<TaskIndex>& index = out.tasks;
  index.resize(p.rank_classes.size());
  for (size_t c = 0; c < p.rank_classes.size(); ++c) {
    const auto& rc = p.rank_classes[c];
    index[c].reserve(rc.tasks.size());
    for (size_t i = 0; i < rc.tasks.size(); ++i) {
      validate_task_fields(p, rc, rc.tasks[i]);
      if (!index[c].emplace(rc.tasks[i].id, static_cast<int>(i)).second) fail(rc, rc.tasks[i], "duplicate task id");
    }
    validate_acyclic(rc, index[c], out.deps[c]);
  }
  std::vector<int> owner(p.num_ranks());
  for (size_t c = 0; c < p.rank_classes.size(); ++c)
    for (int r : p.rank_classes[c].ranks) owner[r] = static_cast<int>(c);
  validate_collective_peers(p, index, owner);
  validate_send_recv(p);
  return out;
}

void validate_against_cluster(const Program& p, const hardware::Cluster& cluster) {
  int levels = static_cast<int>(cluster.levels.size());
  std::vector<int> per_level(levels, 1);  // validate_mesh bounds the ranks to 16M
  for (const auto& a : p.mesh) {
    if (a.level >= levels)
      throw std::runtime_error(fmt::format("step program: mesh axis '{}' is on level {} but cluster '{}' has {} levels",
                                           a.name, a.level, cluster.name, levels));
    if (a.inner_part < 1 || a.size % a.inner_part != 0 || (a.inner_part > 1 && a.level == 0))
      throw std::runtime_error(fmt::format("step program: mesh axis '{}' has inner_part {} (size {}, level {})", a.name,
                                           a.inner_part, a.size, a.level));
    a.add_ranks(per_level);
  }
  for (int l = 0; l < levels; ++l)
    if (per_level[l] > cluster.levels[l].size)
      throw std::runtime_error(fmt::format(
          "step program: mesh axes on level {} ('{}') span {} devices but cluster '{}' has {} there", l,
          cluster.levels[l].name, per_level[l], cluster.name, cluster.levels[l].size));
  for (const auto& rc : p.rank_classes)
    for (const auto& t : rc.tasks) {
      bool priced = (t.kind == TaskKind::compute || t.kind == TaskKind::optimizer) && !t.duration_s && t.flops > 0;
      if (priced && !cluster.device.peak_flops.count(hardware::peak_precision(t.precision)))
        fail(rc, t, fmt::format("cluster '{}' has no {} peak", cluster.name, hardware::to_string(t.precision)));
      for (const hardware::DeviceGroup& g : cluster.groups)
        if (priced && !g.device.peak_flops.count(hardware::peak_precision(t.precision)))
          fail(rc, t, fmt::format("cluster '{}': group '{}' has no {} peak", cluster.name, g.profile,
                                  hardware::to_string(t.precision)));
    }
}

}  // namespace symtensor::sim
