// Collectives (rendezvous of the group, then phases of flows) and pipeline send/recv.
#include <algorithm>
#include <limits>
#include <map>
#include <utility>
#include <stdexcept>

#include <fmt/format.h>

#include "simulator/engine/engine.h"

namespace symtensor::sim {
namespace {

constexpr double kUncapped = std::numeric_limits<double>::infinity();

// On a mesh level a GPU has one link per peer, so its flows get the links they use rather
// than its whole egress: `bandwidth` (the group's share, or one link) split among the
// `flows` a member sends there at once. Other levels are shared by fair shares alone.
double mesh_cap(const hardware::TopologyLevel& level, double bandwidth, int flows) {
  return level.kind == hardware::LinkKind::mesh ? bandwidth / flows : kUncapped;
}

}  // namespace

// A collective's flows on a mesh level get the group's share of the links there as
// collective_time prices it (TopologyLevel::group_bandwidth), a tree step one link.
void Engine::cap_mesh_flows(FlowPlan& plan, const hardware::GroupShape& group, bool tree) const {
  for (auto& phase : plan) {
    std::map<std::pair<int, int>, int> flows;  // (src, level) -> flows it sends in the phase
    for (const FlowSpec& spec : phase) ++flows[{spec.src, spec.level}];
    for (FlowSpec& spec : phase) {
      const hardware::TopologyLevel& level = cluster_.levels[spec.level];
      const double bandwidth = tree ? level.peer_bandwidth() : level.group_bandwidth(group.ranks_per_level[spec.level]);
      spec.cap = std::min(mesh_cap(level, bandwidth, flows[{spec.src, spec.level}]),
                          group_link_cap(spec.src, spec.dst, spec.level));
    }
  }
}

FlowPlan Engine::build_plan(int rank_class, int task, int rank, bool dedupe) {
  const CompiledClass& cc = compiled_.classes[rank_class];
  const hardware::Collective collective = cc.collective[task];
  const double bytes = cc.bytes[task];
  const auto& axes = cc.group_axes(task);
  std::vector<int> members = group_of(program_.mesh, rank, axes);
  const hardware::GroupShape shape = group_shape(program_.mesh, axes, compiled_.num_levels);
  hardware::CollectiveAlgorithm algorithm = cc.algorithm[task];
  if (algorithm == hardware::CollectiveAlgorithm::automatic)
    algorithm = hardware::collective_time(cluster_, collective, shape, bytes, algorithm).algorithm;
  if (algorithm == hardware::CollectiveAlgorithm::automatic) algorithm = hardware::CollectiveAlgorithm::ring;
  Phases phases;
  try {
    phases = expand_collective(collective, algorithm, members, program_.mesh, bytes);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("rank class '{}' task '{}': {}", program_.rank_classes[rank_class].name,
                                         task_name(program_, rank_class, task), e.what()));
  }
  FlowPlan plan;
  plan.reserve(phases.size());
  for (const Phase& phase : phases) {
    std::vector<FlowSpec> specs;
    if (!dedupe) {
      for (const Transfer& tr : phase) {
        const int src = members[tr.src], dst = members[tr.dst];
        specs.push_back({entity_of_rank(src), entity_of_rank(dst), link_level(program_.mesh, src, dst), tr.bytes});
      }
      plan.push_back(std::move(specs));
      continue;
    }
    // Symmetric mode: one flow per (sending class, level) stands for every member of that
    // class. A member may send several transfers on one level in a phase (a ring per
    // channel): they are summed per member first, then the class takes its busiest member.
    std::map<std::pair<int, int>, FlowSpec> per_member;  // (member, level)
    for (const Transfer& tr : phase) {
      const int src = members[tr.src], dst = members[tr.dst];
      const int level = link_level(program_.mesh, src, dst);
      auto [it, fresh] = per_member.try_emplace({tr.src, level}, FlowSpec{entity_of_rank(src), entity_of_rank(dst), level, 0});
      it->second.bytes += tr.bytes;
    }
    for (const auto& [key, spec] : per_member) {
      auto same = std::find_if(specs.begin(), specs.end(),
                               [&](const FlowSpec& s) { return s.src == spec.src && s.level == spec.level; });
      if (same == specs.end()) specs.push_back(spec);
      else if (spec.bytes > same->bytes) *same = spec;
    }
    plan.push_back(std::move(specs));
  }
  // All-to-all runs pairwise whatever the algorithm (expand_collective).
  const bool tree = algorithm == hardware::CollectiveAlgorithm::tree && collective != hardware::Collective::all_to_all;
  cap_mesh_flows(plan, shape, tree);
  return plan;
}

const FlowPlan& Engine::symmetric_plan(int rank_class, int task) {
  const CompiledClass& cc = compiled_.classes[rank_class];
  auto& slot = plan_cache_[{rank_class, cc.group[task], static_cast<int>(cc.collective[task]),
                            static_cast<int>(cc.algorithm[task]), cc.bytes[task]}];
  if (!slot)
    slot = std::make_unique<FlowPlan>(
        build_plan(rank_class, task, program_.rank_classes[rank_class].ranks.front(), true));
  return *slot;
}

const EntityState::GroupEntities& Engine::group_entities(int entity, int task) {
  EntityState& st = entities_[entity];
  const CompiledClass& cc = compiled_.classes[st.rank_class];
  EntityState::GroupEntities& g = st.groups[cc.group[task]];
  if (g.count > 0) return g;
  std::vector<int> entities;
  for (int m : group_of(program_.mesh, st.rank, cc.group_axes(task))) entities.push_back(entity_of_rank(m));
  std::sort(entities.begin(), entities.end());
  entities.erase(std::unique(entities.begin(), entities.end()), entities.end());
  g.count = static_cast<int>(entities.size());
  g.first = entities.front();
  return g;
}

void Engine::arrive_collective(int entity, int task, double now) {
  EntityState& st = entities_[entity];
  const CompiledClass& cc = compiled_.classes[st.rank_class];
  const EntityState::GroupEntities group = group_entities(entity, task);
  std::uint64_t key = (static_cast<std::uint64_t>(cc.collective_id[task]) << 32) | static_cast<std::uint32_t>(group.first);
  auto [it, fresh] = open_instances_.try_emplace(key, -1);
  if (fresh) {
    if (free_instances_.empty()) {
      it->second = static_cast<int>(instances_.size());
      instances_.emplace_back();
    } else {
      it->second = free_instances_.back();
      free_instances_.pop_back();
    }
    CollectiveInstance& inst = instances_[it->second];
    inst = CollectiveInstance{};
    inst.expected = group.count;
    inst.key = key;
  }
  int index = it->second;
  CollectiveInstance& inst = instances_[index];
  inst.arrived.emplace_back(entity, task);
  if (static_cast<int>(inst.arrived.size()) < inst.expected) return;
  open_instances_.erase(it);
  if (options_.mode == SimMode::symmetric) {
    inst.plan = &symmetric_plan(st.rank_class, task);
  } else {
    inst.own_plan = build_plan(st.rank_class, task, st.rank, false);
    inst.plan = nullptr;
  }
  for (const auto& [e, t] : inst.arrived) entities_[e].start[t] = now;  // a collective runs from the last arrival
  start_phase(index, now);
}

void Engine::start_phase(int index, double now) {
  CollectiveInstance& inst = instances_[index];
  while (inst.phase < plan_of(inst).size() && plan_of(inst)[inst.phase].empty()) ++inst.phase;
  if (inst.phase >= plan_of(inst).size()) {
    for (const auto& [e, t] : inst.arrived) queue_.push({now, 0, EventKind::task_done, e, t});
    inst.arrived.clear();
    inst.own_plan.clear();
    free_instances_.push_back(index);
    return;
  }
  const auto& specs = plan_of(inst)[inst.phase];
  inst.pending = static_cast<int>(specs.size());
  for (size_t i = 0; i < specs.size(); ++i)
    queue_.push({now + cluster_.levels[specs[i].level].latency_s, 0, EventKind::latency_done, index,
                 static_cast<int>(i), 0});
}

void Engine::start_send(int entity, int task, double now) {
  const EntityState& st = entities_[entity];
  const CompiledClass& cc = compiled_.classes[st.rank_class];
  int peer_class = cc.peer_class[task];
  int peer_rank = program_.rank_classes[peer_class].ranks[cc.rank_position[st.rank]];
  int dst = entity_of_rank(peer_rank);
  int level = link_level(program_.mesh, st.rank, entities_[dst].rank);
  transfers_.push_back({entity, task, dst, cc.matched_recv[task], level, cc.bytes[task]});
  queue_.push({now + cluster_.levels[level].latency_s, 0, EventKind::latency_done,
               static_cast<int>(transfers_.size() - 1), 0, 1});
}

void Engine::push_flow_updates() {
  for (const FlowFinish& u : updates_) queue_.push({u.time, 0, EventKind::flow_done, u.flow, 0, 0, u.version});
  updates_.clear();
}

void Engine::on_latency_done(const Event& e) {
  int flow;
  FlowOwner owner;
  if (e.c == 1) {
    const P2PTransfer& tr = transfers_[e.a];
    const hardware::TopologyLevel& level = cluster_.levels[tr.level];
    const double cap = std::min(mesh_cap(level, level.peer_bandwidth(), 1),  // a send gets one link
                                group_link_cap(tr.src_entity, tr.dst_entity, tr.level));
    flow = network_.start(e.time, tr.src_entity, tr.dst_entity, tr.level, tr.bytes, cap, updates_);
    owner = {true, e.a};
  } else {
    const CollectiveInstance& inst = instances_[e.a];
    const FlowSpec& spec = plan_of(inst)[inst.phase][e.b];
    flow = network_.start(e.time, spec.src, spec.dst, spec.level, spec.bytes, spec.cap, updates_);
    owner = {false, e.a};
  }
  if (flow >= static_cast<int>(flow_owner_.size())) flow_owner_.resize(flow + 1);
  flow_owner_[flow] = owner;
  push_flow_updates();
}

void Engine::on_flow_done(const Event& e) {
  FlowOwner owner = flow_owner_[e.a];
  if (!network_.finish({e.a, e.version, e.time}, updates_)) return;
  push_flow_updates();
  if (owner.p2p) {
    const P2PTransfer& tr = transfers_[owner.index];
    queue_.push({e.time, 0, EventKind::task_done, tr.src_entity, tr.send_task});
    EntityState& dst = entities_[tr.dst_entity];
    dst.data_arrived[tr.recv_task] = 1;
    if (dst.started[tr.recv_task]) queue_.push({e.time, 0, EventKind::task_done, tr.dst_entity, tr.recv_task});
    return;
  }
  CollectiveInstance& inst = instances_[owner.index];
  if (--inst.pending == 0) {
    ++inst.phase;
    start_phase(owner.index, e.time);
  }
}

}  // namespace symtensor::sim
