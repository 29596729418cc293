#include "simulator/program/program_json.h"

#include <array>
#include <cmath>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "simulator/program/mesh_groups.h"
#include "simulator/program/validate.h"
#include "simulator/stats/atomic_write.h"

namespace symtensor::sim {

using nlohmann::json;
using hardware::Collective;
using hardware::CollectiveAlgorithm;

namespace {

constexpr std::array<std::pair<Collective, std::string_view>, 7> kCollectiveNames{{
    {Collective::all_reduce, "all_reduce"},
    {Collective::all_gather, "all_gather"},
    {Collective::reduce_scatter, "reduce_scatter"},
    {Collective::all_to_all, "all_to_all"},
    {Collective::broadcast, "broadcast"},
    {Collective::reduce, "reduce"},
    {Collective::send_recv, "send_recv"},
}};
constexpr std::array<std::pair<CollectiveAlgorithm, std::string_view>, 4> kAlgorithmNames{{
    {CollectiveAlgorithm::automatic, "automatic"},
    {CollectiveAlgorithm::ring, "ring"},
    {CollectiveAlgorithm::tree, "tree"},
    {CollectiveAlgorithm::hierarchical, "hierarchical"},
}};

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw std::runtime_error(fmt::format("step program: {}: {}", where, what));
}

void check_keys(const json& j, const std::string& where, std::initializer_list<std::string_view> allowed) {
  if (!j.is_object()) fail(where, "expected a JSON object");
  for (const auto& [key, value] : j.items()) {
    bool ok = false;
    for (auto a : allowed) ok = ok || key == a;
    if (!ok) fail(where, fmt::format("unknown key '{}'", key));
  }
}

const json& required(const json& j, const std::string& where, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) fail(where, fmt::format("missing key '{}'", key));
  return *it;
}

std::string get_string(const json& j, const std::string& where, const char* key) {
  const json& v = required(j, where, key);
  if (!v.is_string()) fail(where, fmt::format("'{}' must be a string", key));
  return v.get<std::string>();
}

double get_number(const json& v, const std::string& where, const char* key) {
  if (!v.is_number()) fail(where, fmt::format("'{}' must be a number", key));
  double x = v.get<double>();
  if (!std::isfinite(x) || x < 0) fail(where, fmt::format("'{}' must be a finite number >= 0, got {}", key, x));
  return x;
}

double get_number(const json& j, const std::string& where, const char* key, bool is_required) {
  auto it = j.find(key);
  if (it == j.end()) {
    if (is_required) fail(where, fmt::format("missing key '{}'", key));
    return 0;
  }
  return get_number(*it, where, key);
}

int get_int(const json& v, const std::string& where, const char* key) {
  if (!v.is_number_integer()) fail(where, fmt::format("'{}' must be an integer", key));
  return v.get<int>();
}

std::vector<std::string> get_strings(const json& j, const std::string& where, const char* key) {
  std::vector<std::string> out;
  auto it = j.find(key);
  if (it == j.end()) return out;
  if (!it->is_array()) fail(where, fmt::format("'{}' must be an array of strings", key));
  for (const auto& v : *it) {
    if (!v.is_string()) fail(where, fmt::format("'{}' must be an array of strings", key));
    out.push_back(v.get<std::string>());
  }
  return out;
}

Task task_from_json(const json& j, const std::string& class_where, size_t index) {
  std::string where = fmt::format("{} task #{}", class_where, index);
  if (!j.is_object()) fail(where, "expected a JSON object");
  Task t;
  t.id = get_string(j, where, "id");
  where = fmt::format("{} task '{}'", class_where, t.id);
  std::string kind = get_string(j, where, "kind");
  auto k = parse_task_kind(kind);
  if (!k) fail(where, fmt::format("unknown kind '{}' (compute, optimizer, collective, send, recv, alloc, free)", kind));
  t.kind = *k;
  t.stream = get_string(j, where, "stream");
  t.deps = get_strings(j, where, "deps");
  switch (t.kind) {
    case TaskKind::compute:
    case TaskKind::optimizer: {
      check_keys(j, where, {"id", "kind", "stream", "deps", "flops", "bytes", "precision", "duration_s"});
      t.flops = get_number(j, where, "flops", false);
      t.bytes = get_number(j, where, "bytes", false);
      if (j.contains("duration_s")) t.duration_s = get_number(j["duration_s"], where, "duration_s");
      if (j.contains("precision")) {
        std::string p = get_string(j, where, "precision");
        auto prec = hardware::parse_precision(p);
        if (!prec) fail(where, fmt::format("unknown precision '{}'", p));
        t.precision = *prec;
      } else if (!t.duration_s && t.flops > 0) {
        fail(where, "missing key 'precision' (needed to price its flops)");
      }
      break;
    }
    case TaskKind::collective:
      check_keys(j, where, {"id", "kind", "stream", "deps", "collective", "bytes", "group", "algorithm"});
      t.collective = parse_collective(get_string(j, where, "collective"));
      t.bytes = get_number(j, where, "bytes", true);
      t.group = get_strings(j, where, "group");
      if (!j.contains("group")) fail(where, "missing key 'group'");
      if (j.contains("algorithm")) t.algorithm = parse_algorithm(get_string(j, where, "algorithm"));
      break;
    case TaskKind::send:
    case TaskKind::recv:
      check_keys(j, where, {"id", "kind", "stream", "deps", "peer", "bytes"});
      t.peer = get_string(j, where, "peer");
      t.bytes = get_number(j, where, "bytes", true);
      break;
    case TaskKind::alloc:
    case TaskKind::free:
      check_keys(j, where, {"id", "kind", "stream", "deps", "bytes", "tag"});
      t.bytes = get_number(j, where, "bytes", true);
      t.tag = get_string(j, where, "tag");
      break;
  }
  return t;
}

json task_to_json(const Task& t) {
  json j{{"id", t.id}, {"kind", std::string(to_string(t.kind))}, {"stream", t.stream}};
  if (!t.deps.empty()) j["deps"] = t.deps;
  switch (t.kind) {
    case TaskKind::compute:
    case TaskKind::optimizer:
      j["flops"] = t.flops;
      j["bytes"] = t.bytes;
      j["precision"] = std::string(hardware::to_string(t.precision));
      if (t.duration_s) j["duration_s"] = *t.duration_s;
      break;
    case TaskKind::collective:
      j["collective"] = std::string(collective_name(t.collective));
      j["bytes"] = t.bytes;
      j["group"] = t.group;
      j["algorithm"] = std::string(algorithm_name(t.algorithm));
      break;
    case TaskKind::send:
    case TaskKind::recv:
      j["peer"] = t.peer;
      j["bytes"] = t.bytes;
      break;
    case TaskKind::alloc:
    case TaskKind::free:
      j["bytes"] = t.bytes;
      j["tag"] = t.tag;
      break;
  }
  return j;
}

}  // namespace

std::string_view collective_name(Collective c) {
  for (const auto& [k, n] : kCollectiveNames)
    if (k == c) return n;
  return "?";
}

Collective parse_collective(std::string_view text) {
  for (const auto& [k, n] : kCollectiveNames)
    if (n == text) return k;
  throw std::runtime_error(fmt::format("step program: unknown collective '{}' (all_reduce, all_gather, "
                                       "reduce_scatter, all_to_all, broadcast, reduce, send_recv)", text));
}

std::string_view algorithm_name(CollectiveAlgorithm a) {
  for (const auto& [k, n] : kAlgorithmNames)
    if (k == a) return n;
  return "?";
}

CollectiveAlgorithm parse_algorithm(std::string_view text) {
  for (const auto& [k, n] : kAlgorithmNames)
    if (n == text) return k;
  throw std::runtime_error(
      fmt::format("step program: unknown collective algorithm '{}' (automatic, ring, tree, hierarchical)", text));
}

Program program_from_json(const json& j) {
  check_keys(j, "top level", {"format", "version", "name", "mesh", "rank_classes"});
  if (j.contains("format") && j["format"] != "symtensor-step-program")
    fail("top level", "'format' must be \"symtensor-step-program\"");
  if (j.contains("version") && j["version"] != 1) fail("top level", "unsupported 'version' (expected 1)");
  Program p;
  if (j.contains("name")) p.name = get_string(j, "top level", "name");
  const json& mesh = required(j, "top level", "mesh");
  if (!mesh.is_array() || mesh.empty()) fail("mesh", "must be a non-empty array of axes");
  int with_stride = 0;
  for (size_t i = 0; i < mesh.size(); ++i) {
    std::string where = fmt::format("mesh axis #{}", i);
    check_keys(mesh[i], where, {"name", "size", "level", "stride", "inner_part"});
    hardware::MeshAxis a;
    a.name = get_string(mesh[i], where, "name");
    where = fmt::format("mesh axis '{}'", a.name);
    a.size = get_int(required(mesh[i], where, "size"), where, "size");
    a.level = get_int(required(mesh[i], where, "level"), where, "level");
    if (mesh[i].contains("inner_part")) a.inner_part = get_int(mesh[i]["inner_part"], where, "inner_part");
    if (mesh[i].contains("stride")) {
      a.stride = get_int(mesh[i]["stride"], where, "stride");
      ++with_stride;
    }
    p.mesh.push_back(a);
  }
  if (with_stride == 0) {
    assign_default_strides(p.mesh);
  } else if (with_stride != static_cast<int>(p.mesh.size())) {
    fail("mesh", "give 'stride' on every axis or on none");
  }
  const json& classes = required(j, "top level", "rank_classes");
  if (!classes.is_array() || classes.empty()) fail("rank_classes", "must be a non-empty array");
  for (size_t i = 0; i < classes.size(); ++i) {
    std::string where = fmt::format("rank class #{}", i);
    check_keys(classes[i], where, {"name", "ranks", "static_memory", "tasks"});
    RankClass rc;
    rc.name = get_string(classes[i], where, "name");
    where = fmt::format("rank class '{}'", rc.name);
    const json& ranks = required(classes[i], where, "ranks");
    if (!ranks.is_array()) fail(where, "'ranks' must be an array of integers");
    for (const auto& r : ranks) rc.ranks.push_back(get_int(r, where, "ranks"));
    if (classes[i].contains("static_memory")) {
      const json& sm = classes[i]["static_memory"];
      std::string smw = where + " static_memory";
      check_keys(sm, smw, {"params", "grads", "optimizer_state", "reserved"});
      rc.static_memory.params = get_number(sm, smw, "params", false);
      rc.static_memory.grads = get_number(sm, smw, "grads", false);
      rc.static_memory.optimizer_state = get_number(sm, smw, "optimizer_state", false);
      if (sm.contains("reserved")) rc.static_memory.reserved = get_number(sm, smw, "reserved", false);
    }
    const json& tasks = required(classes[i], where, "tasks");
    if (!tasks.is_array()) fail(where, "'tasks' must be an array");
    rc.tasks.reserve(tasks.size());
    for (size_t k = 0; k < tasks.size(); ++k) rc.tasks.push_back(task_from_json(tasks[k], where, k));
    p.rank_classes.push_back(std::move(rc));
  }
  validate_program(p);
  return p;
}

json program_to_json(const Program& p) {
  json j{{"format", "symtensor-step-program"}, {"version", 1}, {"name", p.name}};
  json mesh = json::array();
  for (const auto& a : p.mesh) {
    json axis = {{"name", a.name}, {"size", a.size}, {"level", a.level}, {"stride", a.stride}};
    if (a.inner_part > 1) axis["inner_part"] = a.inner_part;
    mesh.push_back(std::move(axis));
  }
  j["mesh"] = mesh;
  json classes = json::array();
  for (const auto& rc : p.rank_classes) {
    json tasks = json::array();
    for (const auto& t : rc.tasks) tasks.push_back(task_to_json(t));
    classes.push_back({{"name", rc.name},
                       {"ranks", rc.ranks},
                       {"static_memory",
                        {{"params", rc.static_memory.params},
                         {"grads", rc.static_memory.grads},
                         {"optimizer_state", rc.static_memory.optimizer_state},
                         {"reserved", rc.static_memory.reserved}}},
                       {"tasks", tasks}});
  }
  j["rank_classes"] = classes;
  return j;
}

Program load_program(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("step program: cannot open '{}'", path));
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error& e) {
    throw std::runtime_error(fmt::format("step program: '{}' is not valid JSON (byte {})", path, e.byte));
  }
  try {
    return program_from_json(j);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("{}: {}", path, e.what()));
  }
}

void save_program(const Program& program, const std::string& path) {
  write_file_atomically(path, program_to_json(program).dump(1) + "\n");
}

}  // namespace symtensor::sim
