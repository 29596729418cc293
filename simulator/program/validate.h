#pragma once
#include "simulator/program/program.h"
#include "simulator/program/task_index.h"

namespace symtensor::sim {

// Checks a program on its own (no cluster): mesh strides form a bijection, every rank is
// in exactly one class, task ids are unique, dependencies exist and form no cycle (also
// with stream order), fields fit the kind, streams fit the kind, collective groups name
// mesh axes and every group member's class has the same collective (same id), send/recv
// pair up. Throws std::runtime_error with one line naming the class and task.
void validate_program(const Program& program);
// The same checks, returning the index they built (the engine needs it again to compile
// the program).
ProgramIndex validate_program_indexed(const Program& program);

// Checks what needs the cluster: axis levels exist and fit the levels' sizes, and every
// precision used by a priced task has a peak.
void validate_against_cluster(const Program& program, const hardware::Cluster& cluster);

}  // namespace symtensor::sim
