#pragma once
// The discrete-event engine behind simulate(). Simulated ranks ("entities") each run
// their class's streams like CUDA streams: in program order, a task starting once it is at
// the head of its stream and its dependencies are done.
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "hardware/cluster.h"
#include "simulator/collectives/phases.h"
#include "simulator/engine/compiled_program.h"
#include "simulator/engine/event_queue.h"
#include "simulator/engine/simulator.h"
#include "simulator/network/network.h"

namespace symtensor::sim {

struct EntityState {
  int rank_class = 0;
  int rank = 0;  // the concrete rank it stands for (the class's first rank when symmetric)
  int device_group = -1;  // a mixed fleet's group holding all it stands for; -1: none or several
  std::vector<int> deps_left;
  std::vector<double> start, end;
  std::vector<char> started, done, data_arrived;
  std::vector<int> stream_head;  // position in the stream's task list
  std::vector<char> stream_busy;
  double live_bytes = 0;
  double peak_bytes = 0;
  std::vector<MemoryPoint> memory;
  // Per group of its class (CompiledClass::groups), once first asked: the entities of its
  // group there (count, and the least one, which keys the rendezvous).
  struct GroupEntities {
    int count = 0;  // 0: not computed yet
    int first = 0;
  };
  std::vector<GroupEntities> groups;
};

struct FlowSpec {
  int src = 0;  // entities
  int dst = 0;
  int level = 0;
  double bytes = 0;
  double cap = std::numeric_limits<double>::infinity();  // Network::start's
};
using FlowPlan = std::vector<std::vector<FlowSpec>>;

class Engine {
 public:
  Engine(const Program& program, const hardware::Cluster& cluster, const SimOptions& options);
  // A program already compiled (a lean program's): `program` gives the mesh and the rank
  // classes' names, ranks and static memory; its task lists may be empty.
  Engine(const Program& program, CompiledProgram compiled, const hardware::Cluster& cluster, const SimOptions& options);
  SimResult run();

 private:
  struct CollectiveInstance {
    int expected = 0;
    std::vector<std::pair<int, int>> arrived;  // (entity, task)
    const FlowPlan* plan = nullptr;  // cached plan (symmetric mode); own_plan when null
    FlowPlan own_plan;
    size_t phase = 0;
    int pending = 0;
    std::uint64_t key = 0;
  };
  struct P2PTransfer {
    int src_entity, send_task, dst_entity, recv_task, level;
    double bytes;
  };
  struct FlowOwner {
    bool p2p = false;
    int index = 0;
  };

  static const FlowPlan& plan_of(const CollectiveInstance& inst) { return inst.plan ? *inst.plan : inst.own_plan; }
  int entity_of_rank(int rank) const;
  // A flow between two groups of a mixed fleet on the outermost level, where the fleet states
  // their link: its bandwidth; infinity otherwise (the slower NIC of the two then bounds it).
  double group_link_cap(int src, int dst, int level) const;
  void try_start(int entity, int stream, double now);
  void start_task(int entity, int task, double now);
  void finish_task(int entity, int task, double now);
  void arrive_collective(int entity, int task, double now);
  void start_phase(int instance, double now);
  void start_send(int entity, int task, double now);
  void on_latency_done(const Event& e);
  void on_flow_done(const Event& e);
  void push_flow_updates();
  const FlowPlan& symmetric_plan(int rank_class, int task);
  FlowPlan build_plan(int rank_class, int task, int rank, bool dedupe);
  void cap_mesh_flows(FlowPlan& plan, const hardware::GroupShape& group, bool tree) const;
  [[noreturn]] void report_stall(double now) const;
  SimResult build_result() const;

  const Program& program_;
  const hardware::Cluster& cluster_;
  SimOptions options_;
  CompiledProgram compiled_;
  std::vector<EntityState> entities_;
  EventQueue queue_;
  Network network_;
  std::vector<FlowFinish> updates_;
  std::vector<FlowOwner> flow_owner_;
  std::vector<CollectiveInstance> instances_;
  std::vector<int> free_instances_;
  std::unordered_map<std::uint64_t, int> open_instances_;
  std::vector<P2PTransfer> transfers_;
  // Symmetric mode: one plan per (class, group, collective, algorithm, bytes), shared by
  // every task asking the same (each micro-batch, each layer).
  using PlanKey = std::tuple<int, int, int, int, double>;
  std::map<PlanKey, std::unique_ptr<FlowPlan>> plan_cache_;
  const EntityState::GroupEntities& group_entities(int entity, int task);
  double now_ = 0;
};

}  // namespace symtensor::sim
