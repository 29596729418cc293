#include "simulator/program/task_factory.h"

namespace symtensor::sim {

namespace {
Task base(std::string id, TaskKind kind, std::string stream, Deps deps) {
  Task t;
  t.id = std::move(id);
  t.kind = kind;
  t.stream = std::move(stream);
  t.deps = std::move(deps);
  return t;
}
}  // namespace

Task compute_task(std::string id, double flops, double bytes, hardware::Precision precision, Deps deps) {
  Task t = base(std::move(id), TaskKind::compute, std::string(kComputeStream), std::move(deps));
  t.flops = flops;
  t.bytes = bytes;
  t.precision = precision;
  return t;
}

Task timed_task(std::string id, double seconds, Deps deps, TaskKind kind) {
  Task t = base(std::move(id), kind, std::string(kComputeStream), std::move(deps));
  t.duration_s = seconds;
  return t;
}

Task collective_task(std::string id, std::string stream, hardware::Collective collective, double bytes,
                     std::vector<std::string> group, Deps deps, hardware::CollectiveAlgorithm algorithm) {
  Task t = base(std::move(id), TaskKind::collective, std::move(stream), std::move(deps));
  t.collective = collective;
  t.bytes = bytes;
  t.group = std::move(group);
  t.algorithm = algorithm;
  return t;
}

Task send_task(std::string id, std::string stream, std::string peer, double bytes, Deps deps) {
  Task t = base(std::move(id), TaskKind::send, std::move(stream), std::move(deps));
  t.peer = std::move(peer);
  t.bytes = bytes;
  return t;
}

Task recv_task(std::string id, std::string stream, std::string peer, double bytes, Deps deps) {
  Task t = base(std::move(id), TaskKind::recv, std::move(stream), std::move(deps));
  t.peer = std::move(peer);
  t.bytes = bytes;
  return t;
}

Task alloc_task(std::string id, std::string stream, double bytes, std::string tag, Deps deps) {
  Task t = base(std::move(id), TaskKind::alloc, std::move(stream), std::move(deps));
  t.bytes = bytes;
  t.tag = std::move(tag);
  return t;
}

Task free_task(std::string id, std::string stream, double bytes, std::string tag, Deps deps) {
  Task t = base(std::move(id), TaskKind::free, std::move(stream), std::move(deps));
  t.bytes = bytes;
  t.tag = std::move(tag);
  return t;
}

}  // namespace symtensor::sim
