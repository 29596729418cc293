#pragma once
// Graphs and clusters for the search tests: a hand-built MLP, the one-layer GPT training
// graph, and zoo models imported with the batch (and sequence) bound.
#include <string>

#include "compiler/onnx_import/import.h"
#include "hardware/cluster.h"
#include "hardware/stack.h"
#include "onnx_models/model_zoo.h"
#include "onnx_models/presets.h"
#include "tests/compiler/gpt_layer_util.h"

namespace symtensor::testing {

// x[batch, h] -> (MatMul W[h,4h] -> Relu -> MatMul W[4h,h]) x layers -> y
inline onnx::ModelProto mlp_model(int layers, std::int64_t h) {
  auto m = make_model();
  add_input(m, "x", {std::string("batch"), h});
  std::string params, cur = "x";
  for (int l = 0; l < layers; ++l) {
    const std::string w1 = "w1_" + std::to_string(l), w2 = "w2_" + std::to_string(l);
    add_input(m, w1, {h, 4 * h});
    add_input(m, w2, {4 * h, h});
    params += (params.empty() ? "" : ",") + w1 + "," + w2;
    add_node(m, "MatMul", {cur, w1}, {"a" + std::to_string(l)});
    add_node(m, "Relu", {"a" + std::to_string(l)}, {"r" + std::to_string(l)});
    add_node(m, "MatMul", {"r" + std::to_string(l), w2}, {"y" + std::to_string(l)});
    cur = "y" + std::to_string(l);
  }
  add_output(m, cur, {std::string("batch"), h});
  auto* meta = m.add_metadata_props();
  meta->set_key("symtensor.parameters");
  meta->set_value(params);
  return m;
}

inline compiler::Graph import_bound(const onnx::ModelProto& model, const std::string& name, double batch, double seq = 0) {
  compiler::ImportOptions o;
  o.bindings = {{"batch", batch}};
  if (seq > 0) o.bindings["seq"] = seq;
  o.warn_opaque = false;
  return compiler::import_onnx_model(model, name, o);
}

inline compiler::Graph zoo_graph(const std::string& preset, const models::Overrides& overrides, double batch, double seq) {
  const models::ModelConfig config = models::apply_overrides(models::preset_config(preset), overrides);
  return import_bound(models::build_model(config), preset, batch, seq);
}

inline hardware::Cluster cluster_of(const std::string& profile, int nodes, int gpus_per_node) {
  return hardware::scale_cluster(hardware::load_cluster(profile), nodes, gpus_per_node);
}

// H100 x8 beside A100 x16 (dgx-h100x1+dgx-a100x2) with Megatron-LM's stack (its kernel factors:
// H100 GEMMs at 1.10x the profile's curve, A100 as the profile states): the tests' mixed fleet.
inline hardware::Cluster h100_a100_fleet() {
  return hardware::with_software(hardware::load_cluster("dgx-h100x1+dgx-a100x2"), hardware::Software{});
}

}  // namespace symtensor::testing
