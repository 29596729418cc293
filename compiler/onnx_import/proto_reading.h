#pragma once
// Small readers over ONNX protobuf messages, shared by the importer and the rewriter.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "compiler/ir/graph.h"

namespace symtensor::compiler {

// Parses an ONNX file; throws "PATH: ..." for a missing, unreadable or non-ONNX file.
onnx::ModelProto read_model_file(const std::string& path);
// Reads the external data of every initializer stored outside `model` (one side file such
// as HF Optimum's model.onnx_data, or one file per tensor; locations relative to the folder
// of `model_path`) into the tensor itself. Only the ONNX rewrite needs weights: import and
// planning locate external data and never read it. Throws naming the tensor and the file.
void inline_external_data(onnx::ModelProto& model, const std::string& model_path);

// The elements `t`'s dims hold, or `limit` + 1 when more (counted without overflow);
// nullopt when a dim is negative.
std::optional<std::uint64_t> element_count(const onnx::TensorProto& t, std::uint64_t limit);

// Integer elements of a tensor proto held inline (int64/int32/int8/uint8/bool/...), or
// nullopt for external data, floating types or tensors over `max_elements`.
std::optional<std::vector<std::int64_t>> read_integer_elements(const onnx::TensorProto& t,
                                                               std::size_t max_elements);

// The value of a one-element tensor held inline (any numeric type), else nullopt.
std::optional<double> read_scalar(const onnx::TensorProto& t);

// Symbolic shape of a type proto: dim_value -> number, dim_param -> named symbol
// (ONNX's own unk__N names included; empty dims -> fresh symbols). nullopt when rank is unknown.
std::optional<Shape> shape_from_type(const onnx::TypeProto& type, SymbolTable& symbols);

Shape shape_from_dims(const google::protobuf::RepeatedField<std::int64_t>& dims);

}  // namespace symtensor::compiler
