// libFuzzer target: arbitrary bytes parsed as an ONNX ModelProto, then imported (checker,
// strict shape inference, symbolic shape pass, parameters). Import may reject the model,
// but only with std::runtime_error (the project's one-line error); any other exception,
// a crash, a leak or undefined behaviour is a finding.
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include <onnx/onnx_pb.h>

#include "compiler/onnx_import/import.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  onnx::ModelProto model;
  if (!model.ParseFromArray(data, static_cast<int>(size))) return 0;
  symtensor::compiler::ImportOptions options;
  options.warn_opaque = false;
  try {
    symtensor::compiler::Graph graph = symtensor::compiler::import_onnx_model(model, "fuzz.onnx", options);
    // Models that import: once more with the zoo's dims bound, which folds more shapes.
    if (graph.symbols.contains("batch")) {
      options.bindings = {{"batch", 2}};
      if (graph.symbols.contains("seq")) options.bindings["seq"] = 16;
      symtensor::compiler::import_onnx_model(model, "fuzz.onnx", options);
    }
  } catch (const std::runtime_error&) {
  }
  return 0;
}
