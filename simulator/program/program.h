#pragma once
// The step program: the simulator's input. One task list per rank class (a set of ranks
// that do identical work), the device mesh the collectives' groups refer to, and static
// memory. The compiler lowers a Plan into this; it also reads/writes as JSON (program_json.h).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hardware/cluster.h"
#include "hardware/collectives.h"
#include "hardware/device_mesh.h"

namespace symtensor::sim {

enum class TaskKind : std::uint8_t { compute, optimizer, collective, send, recv, alloc, free };
std::string_view to_string(TaskKind k);
std::optional<TaskKind> parse_task_kind(std::string_view text);

// The stream every compute/optimizer task runs on; every other stream name is a
// communication stream (e.g. "comm_tp", "comm_dp", "p2p").
inline constexpr std::string_view kComputeStream = "compute";

struct Task {
  std::string id;                 // unique inside its rank class; collectives match across ranks by id
  TaskKind kind = TaskKind::compute;
  std::string stream;
  std::vector<std::string> deps;  // ids of tasks of the same rank class

  // compute / optimizer
  double flops = 0;
  hardware::Precision precision = hardware::Precision::bf16;
  std::optional<double> duration_s;  // overrides the roofline when set

  // compute/optimizer: HBM traffic; collective: S as nccl-tests defines it;
  // send/recv: message size; alloc/free: bytes allocated or released.
  double bytes = 0;

  // collective
  hardware::Collective collective = hardware::Collective::all_reduce;
  hardware::CollectiveAlgorithm algorithm = hardware::CollectiveAlgorithm::automatic;
  std::vector<std::string> group;  // mesh axis names

  // send / recv: the other rank class; the i-th rank of one class talks to the i-th of the other.
  // The k-th send from A to B pairs with the k-th recv in B from A (program order).
  std::string peer;

  // alloc / free
  std::string tag;  // e.g. "activations mb3 layer5"
};

struct StaticMemory {
  double params = 0;
  double grads = 0;
  double optimizer_state = 0;
  // Held for the whole step beside the model states: workspaces and staging buffers at
  // their largest, and what the device reserves (CUDA context, NCCL, the allocator).
  double reserved = 0;
  double model_states() const { return params + grads + optimizer_state; }
  double total() const { return model_states() + reserved; }
};

struct RankClass {
  std::string name;
  std::vector<int> ranks;  // concrete ranks of the mesh this class stands for
  StaticMemory static_memory;
  std::vector<Task> tasks;  // program order; order inside each stream is execution order
};

struct Program {
  std::string name;
  // Axes outermost first, as hardware::DeviceMesh::axes() gives them (name, size, level, stride).
  std::vector<hardware::MeshAxis> mesh;
  std::vector<RankClass> rank_classes;

  int num_ranks() const;
  const RankClass* find_class(std::string_view name) const;
};

}  // namespace symtensor::sim
