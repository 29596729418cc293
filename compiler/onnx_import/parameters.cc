#include "compiler/onnx_import/parameters.h"

#include <cctype>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "compiler/onnx_import/import.h"

namespace symtensor::compiler {
namespace {

std::set<std::string> metadata_list(const Graph& g, const std::string& key) {
  std::set<std::string> names;
  auto it = g.metadata.find(key);
  if (it == g.metadata.end()) return names;
  std::stringstream ss(it->second);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto b = item.find_first_not_of(" \t\n");
    const auto e = item.find_last_not_of(" \t\n");
    if (b != std::string::npos) names.insert(item.substr(b, e - b + 1));
  }
  return names;
}

bool is_weight_slot(const Node& n, int slot) {
  const std::string& op = n.op_type;
  if (op == "MatMul" || op == "Gemm" || op == "Einsum") return true;
  if (op == "Conv" || op == "ConvTranspose") return slot == 1 || slot == 2;
  if (op == "Gather") return slot == 0;
  if (op == "LayerNormalization" || op == "SimplifiedLayerNormalization" || op == "BatchNormalization" ||
      op == "InstanceNormalization" || op == "GroupNormalization")
    return slot == 1 || slot == 2;
  return false;
}

// A use of a tensor: (consumer, input slot), looking through ops that pass a value on
// unchanged (the exporter's Identity for de-duplicated initializers, a Transpose of a
// tied weight, a Cast).
struct Use {
  const Node* node;
  int slot;
};

void collect_uses(const Graph& g, TensorId id, std::vector<Use>& uses) {
  for (NodeId c : g.tensor(id).consumers) {
    const Node& n = g.node(c);
    for (std::size_t slot = 0; slot < n.inputs.size(); ++slot) {
      if (n.inputs[slot] != id) continue;
      const bool pass_through = (n.op_type == "Identity" || n.op_type == "Cast" || n.op_type == "Transpose") &&
                                n.domain.empty() && !n.outputs.empty() && n.outputs[0] != kNone;
      if (pass_through) collect_uses(g, n.outputs[0], uses);
      else uses.push_back({&n, static_cast<int>(slot)});
    }
  }
}

bool only_batchnorm_statistics(const std::vector<Use>& uses) {
  if (uses.empty()) return false;
  for (const Use& u : uses)
    if (u.node->op_type != "BatchNormalization" || (u.slot != 3 && u.slot != 4)) return false;
  return true;
}

bool used_in_weight_slot(const std::vector<Use>& uses) {
  for (const Use& u : uses)
    if (is_weight_slot(*u.node, u.slot)) return true;
  return false;
}

bool more_than_one_element(const Tensor& t) {
  GiNaC::ex n = t.num_elements();
  return !(GiNaC::is_a<GiNaC::numeric>(n) && GiNaC::ex_to<GiNaC::numeric>(n) <= 1);
}

// "/layers.12/mlp/MatMul_3" -> "/layers.#/mlp/MatMul_#".
std::string numbers_blanked(const std::string& name) {
  std::string out;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) {
      out += name[i];
      continue;
    }
    out += '#';
    while (i + 1 < name.size() && std::isdigit(static_cast<unsigned char>(name[i + 1]))) ++i;
  }
  return out;
}

}  // namespace

void classify_parameters(Graph& graph) {
  const auto buffers = metadata_list(graph, kBuffersMetadataKey);
  const auto marked = metadata_list(graph, kParametersMetadataKey);
  for (const auto& name : buffers)
    if (graph.find_tensor(name) == kNone)
      throw std::runtime_error(std::string("metadata '") + kBuffersMetadataKey + "' names tensor '" + name +
                               "' that the graph does not have");
  for (const auto& name : marked) {
    const TensorId id = graph.find_tensor(name);
    if (id == kNone || !graph.tensor(id).is_graph_input)
      throw std::runtime_error(std::string("metadata '") + kParametersMetadataKey + "' names '" + name +
                               "', which is not a graph input");
  }
  for (std::size_t i = 0; i < graph.tensors().size(); ++i) {
    const TensorId id = static_cast<TensorId>(i);
    Tensor& t = graph.tensor(id);
    if (marked.count(t.name)) {
      t.is_parameter = true;
      continue;
    }
    if (!is_floating(t.dtype) || !t.is_constant || !more_than_one_element(t) || buffers.count(t.name)) continue;
    std::vector<Use> uses;
    collect_uses(graph, id, uses);
    if (t.initializer.storage != InitializerData::Storage::none)
      t.is_parameter = !only_batchnorm_statistics(uses);
    else
      t.is_parameter = used_in_weight_slot(uses);
  }
  std::vector<TensorId> activations;
  for (TensorId in : graph.inputs)
    if (!graph.tensor(in).is_parameter) activations.push_back(in);
  graph.inputs = std::move(activations);
}

std::vector<std::string> shared_weight_notes(const Graph& graph) {
  std::vector<std::string> notes;
  for (std::size_t i = 0; i < graph.tensors().size(); ++i) {
    const Tensor& t = graph.tensor(static_cast<TensorId>(i));
    if (!t.is_parameter) continue;
    std::vector<Use> uses;
    collect_uses(graph, static_cast<TensorId>(i), uses);
    // Grouped by operator type, slot and node name with its numbers blanked: the same place
    // in layers.0, layers.1, ... (a head shared by the main model and an MTP module is not).
    std::map<std::tuple<std::string, int, std::string>, std::vector<const Node*>> by_place;
    for (const Use& u : uses)
      if (is_weight_slot(*u.node, u.slot)) by_place[{u.node->op_type, u.slot, numbers_blanked(u.node->name)}].push_back(u.node);
    // Every use at one place (a head shared by the main model and MTP modules is at two).
    if (by_place.size() != 1) continue;
    for (const auto& [place, nodes] : by_place) {
      if (nodes.size() < 2) continue;
      notes.push_back("weight '" + t.name + "' feeds input " + std::to_string(std::get<1>(place)) + " of " +
                      std::to_string(nodes.size()) + " " + std::get<0>(place) + " operators ('" + nodes[0]->name + "', '" +
                      nodes[1]->name + "'" + (nodes.size() > 2 ? ", ..." : "") +
                      "): counted once; if these are separate layers whose equal values the exporter merged, "
                      "export them with distinct values");
    }
  }
  return notes;
}

}  // namespace symtensor::compiler
