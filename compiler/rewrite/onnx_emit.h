#pragma once
// Small builders shared by the SPMD and emulation writers.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace symtensor::compiler {

onnx::ValueInfoProto tensor_value_info(const std::string& name, int elem_type, const std::vector<std::int64_t>& shape);

// Copies ir_version, producer fields and opset imports of `original`; empty graph named `name`.
onnx::ModelProto model_skeleton(const onnx::ModelProto& original, const std::string& name);
void add_opset(onnx::ModelProto& model, const std::string& domain, std::int64_t version);  // unless present

// Runs onnx::checker and strict shape inference (custom-domain nodes are skipped by both);
// throws "LABEL: ..." on the first problem.
void check_model_strict(const onnx::ModelProto& model, const std::string& label);

// Integer constants shared inside one graph, one initializer per distinct list.
class Int64Constants {
 public:
  Int64Constants(onnx::GraphProto& graph, std::string prefix) : graph_(graph), prefix_(std::move(prefix)) {}
  std::string get(const std::vector<std::int64_t>& values);

 private:
  onnx::GraphProto& graph_;
  std::string prefix_;
  std::map<std::vector<std::int64_t>, std::string> names_;
};

}  // namespace symtensor::compiler
