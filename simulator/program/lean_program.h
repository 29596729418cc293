#pragma once
// A step program as code builds it for the engine (the searches' lowering): tasks by index,
// dependencies as indices, each class's streams, collective groups and memory tags named
// once. It skips what the text Program costs on a step of a million tasks (an id, a stream
// name and dependency ids per task, then their index). to_program gives the text form when
// the builder kept the task ids (LeanClass::ids); simulate() runs either form alike.
#include <string>
#include <vector>

#include "simulator/program/program.h"

namespace symtensor::sim {

struct LeanTask {
  TaskKind kind = TaskKind::compute;
  hardware::Precision precision = hardware::Precision::bf16;
  hardware::Collective collective = hardware::Collective::all_reduce;
  hardware::CollectiveAlgorithm algorithm = hardware::CollectiveAlgorithm::automatic;
  int stream = 0;  // index into LeanClass::streams
  int group = -1;  // collective: index into LeanClass::groups
  int peer = -1;   // send / recv: the other rank class's index
  int tag = -1;    // alloc / free: index into LeanClass::tags
  // collective whose group reaches past its class: its key, the same in every member class's
  // task (the text form's shared id); -1 for a group inside the class
  int shared = -1;
  double flops = 0;
  double bytes = 0;        // as Task::bytes
  double duration_s = -1;  // compute / optimizer: the duration when >= 0, else the roofline's
};

struct LeanClass {
  std::vector<std::string> streams;
  std::vector<std::vector<int>> groups;  // collective groups: mesh axis indices (into Program::mesh)
  std::vector<std::string> tags;
  std::vector<LeanTask> tasks;  // program order, as RankClass::tasks
  // Task i's dependencies: deps[dep_start[i] .. dep_start[i+1]), indices into tasks.
  std::vector<int> dep_start{0};
  std::vector<int> deps;
  std::vector<std::string> ids;  // the tasks' ids, when the builder kept them (to_program needs them)

  std::size_t size() const { return tasks.size(); }
  // Appends a task and its dependencies; its index.
  int push(const LeanTask& task, const std::vector<int>& task_deps);
  int stream_index(std::string_view name);  // the stream's index, added when new
  int group_index(const std::vector<int>& axes);
};

struct LeanProgram {
  // Name, mesh, and the rank classes' names, ranks and static memory; no tasks.
  Program shape;
  std::vector<LeanClass> classes;  // one per shape.rank_classes entry
};

// The text program with the same tasks in the same order (ids from LeanClass::ids; throws
// std::logic_error when a class kept none). Consumes the lean program.
Program to_program(LeanProgram lean);

}  // namespace symtensor::sim
