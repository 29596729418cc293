#pragma once
// ONNX -> IR. Runs ONNX's checker and strict shape inference, then SymTensor's symbolic
// shape pass (dim_params become symbols, unnamed dims fresh ones, exporter shape
// sub-graphs are folded so Reshape targets are known symbolically).
//
// Then the fusion pass (compiler/fusion/fusion_pass.h) as ImportOptions::fusion says.
//
// The batch dim (Graph::batch_dim) is ImportOptions::batch_dim, else `batch` when an input
// has it, else the leading symbolic dim of the data inputs, whatever its name. A model with
// static shapes is imported with its inputs' leading dim made the symbol `batch`, bound to
// the exported value, so that it can be planned on that batch; when its graph bakes that
// value in (a Reshape to [12, -1]) it keeps its static shapes and has no batch dim
// (metadata kStaticBatchMetadataKey says why).
//
// Parameters are: initializers (inline or external data; external files are located,
// never read), weight tensors held in Constant nodes (float tensors of rank >= 1 with more
// than one element), and graph inputs listed in the model's metadata property
// `symtensor.parameters` (comma-separated names): the convention for weight-free models.
#include <map>
#include <string>

#include "compiler/fusion/fusion_pass.h"
#include "compiler/ir/graph.h"

namespace onnx { class ModelProto; }

namespace symtensor::compiler {

inline constexpr const char* kParametersMetadataKey = "symtensor.parameters";
inline constexpr const char* kStaticBatchMetadataKey = "symtensor.static_batch";

struct ImportOptions {
  std::map<std::string, double> bindings;  // dim symbol -> value (--bind batch=8)
  bool warn_opaque = true;                 // warnings and notes on stderr: per opaque op type, per shared weight, merged heads split
  FusionOptions fusion;                    // the fusion pass run on the imported graph
  std::string batch_dim;                   // --batch-dim: which input dim is the batch (default: found)
  std::string sequence_dim;                // --seq-dim: which dim is the sequence (default: `seq`)
};

// Throws std::runtime_error with a one-line message naming the file and the problem.
Graph import_onnx_file(const std::string& path, const ImportOptions& options = {});
Graph import_onnx_model(const onnx::ModelProto& model, const std::string& source_name,
                        const ImportOptions& options = {});

// Parses "batch=8,seq=2048"; throws on a malformed or non-positive value.
std::map<std::string, double> parse_bindings(const std::string& text);

}  // namespace symtensor::compiler
