#pragma once
// The step program turned into indices for the engine: streams, dependents, task
// durations, collective ids shared across classes, send -> recv matches.
#include <string>
#include <vector>

#include "hardware/cluster.h"
#include "simulator/program/program.h"

namespace symtensor::sim {

struct CompiledClass {
  std::vector<std::string> streams;         // "compute" first when present
  std::vector<std::vector<int>> stream_tasks;  // task indices per stream, program order
  std::vector<int> task_stream;
  std::vector<int> dep_count;
  std::vector<std::vector<int>> dependents;
  std::vector<double> duration_s;           // compute / optimizer tasks
  std::vector<int> collective_id;           // shared id of the task name (-1 if not a collective)
  std::vector<std::vector<int>> group_axes; // collectives: mesh axis indices
  std::vector<int> peer_class;              // send/recv: the other class
  std::vector<int> matched_recv;            // send: task index of its recv in peer_class
  std::vector<int> rank_position;           // rank -> index in this class's ranks (-1 if absent)
};

struct CompiledProgram {
  std::vector<CompiledClass> classes;
  std::vector<int> class_of_rank;
  int num_levels = 0;
};

// Durations follow the roofline: max(flops / (peak · efficiency(flops)), bytes / HBM) + launch.
double compute_duration(const hardware::Device& device, const Task& task);

CompiledProgram compile_program(const Program& program, const hardware::Cluster& cluster);

// Throws when a rank of some class sees different classes in a collective group (or a
// different link level to its pipeline peer) than the class's first rank does: such a
// program can only be simulated in full mode.
void check_symmetry(const Program& program, const CompiledProgram& compiled);

}  // namespace symtensor::sim
