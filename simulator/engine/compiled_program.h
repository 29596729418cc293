#pragma once
// The step program turned into indices for the engine: streams, dependents, task
// durations, collective ids shared across classes, send -> recv matches.
#include <span>
#include <string>
#include <vector>

#include "hardware/cluster.h"
#include "simulator/program/lean_program.h"
#include "simulator/program/program.h"
#include "simulator/program/task_index.h"

namespace symtensor::sim {

struct CompiledClass {
  std::span<const int> dependents(int task) const {
    return {dependent_list.data() + dependent_start[task], dependent_list.data() + dependent_start[task + 1]};
  }
  const std::vector<int>& group_axes(int task) const { return groups[group[task]]; }

  std::vector<std::string> streams;         // "compute" first when present
  std::vector<std::vector<int>> stream_tasks;  // task indices per stream, program order
  std::vector<int> task_stream;
  std::vector<int> dep_count;
  // Task i's dependents are dependent_list[dependent_start[i] .. dependent_start[i+1]).
  std::vector<int> dependent_start;
  std::vector<int> dependent_list;
  std::vector<double> duration_s;           // compute / optimizer tasks
  // The task fields the engine reads (Task's), per task.
  std::vector<TaskKind> kind;
  std::vector<double> bytes;
  std::vector<hardware::Collective> collective;
  std::vector<hardware::CollectiveAlgorithm> algorithm;
  std::vector<int> tag;                     // alloc / free: index into tags (-1 otherwise)
  std::vector<std::string> tags;
  std::vector<int> collective_id;           // shared id of the task name (-1 if not a collective)
  std::vector<int> group;                   // collectives: index into groups (-1 if not a collective)
  std::vector<std::vector<int>> groups;     // the distinct groups' mesh axis indices
  std::vector<int> peer_class;              // send/recv: the other class
  std::vector<int> matched_recv;            // send: task index of its recv in peer_class
  std::vector<int> rank_position;           // rank -> index in this class's ranks (-1 if absent)
  // A mixed fleet's groups (hardware::Cluster::groups) holding the class's ranks, ascending;
  // empty on a cluster of one GPU type. A class spanning several plays at its slowest
  // member's pace: each compute task takes its longest time on their devices, memory is
  // the least of theirs, links the slowest.
  std::vector<int> device_groups;
};

struct CompiledProgram {
  std::vector<CompiledClass> classes;
  std::vector<int> class_of_rank;
  int num_levels = 0;
};

// Durations follow the roofline: max(flops / (peak · efficiency(flops)), bytes / HBM) + launch.
double compute_duration(const hardware::Device& device, const Task& task);
// The same on the slowest of a class's devices (device_groups; the cluster's device when empty).
double compute_duration(const hardware::Cluster& cluster, const std::vector<int>& device_groups, const Task& task);
// Usable memory of a class: the least of its devices'.
double usable_memory(const hardware::Cluster& cluster, const std::vector<int>& device_groups);
// The distinct groups of a mixed fleet holding `ranks` (empty for a cluster of one type).
std::vector<int> device_groups_of(const hardware::Cluster& cluster, const std::vector<int>& ranks);

CompiledProgram compile_program(const Program& program, const hardware::Cluster& cluster);
// The same with each class's task index at hand (validate_program_indexed's).
CompiledProgram compile_program(const Program& program, const hardware::Cluster& cluster,
                                const ProgramIndex& index);

// A lean program's compiled form, equal to compile_program's of to_program(lean). A collective
// whose group reaches past its class (a data-parallel reduction over a mixed fleet's per-group
// classes) names its shared key (LeanTask::shared, as the text form's shared id); throws
// std::runtime_error when it names none, or when a priced task's precision has no peak on the
// cluster (validate_against_cluster's check).
CompiledProgram compile_program(const LeanProgram& program, const hardware::Cluster& cluster);

// The name of task `task` of class `rank_class` in messages: its id, or "#index" when the
// program carries no task list (a lean program's shape).
std::string task_name(const Program& program, int rank_class, int task);

// Throws when a rank of some class sees different classes in a collective group (or a
// different link level to its pipeline peer) than the class's first rank does: such a
// program can only be simulated in full mode.
void check_symmetry(const Program& program, const CompiledProgram& compiled);

}  // namespace symtensor::sim
