#pragma once
// Plain bytes of an ONNX tensor and slicing of them: how sharded initializers get their
// per-rank data. Inline data only (raw_data or the typed repeated fields); external data
// is refused with a one-line error.
#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace symtensor::compiler {

struct TensorBytes {
  int data_type = 0;                 // onnx::TensorProto::DataType
  std::vector<std::int64_t> dims;
  std::size_t element_size = 0;
  std::string bytes;                 // row-major, little-endian, element_size * elements

  std::int64_t elements() const;
};

// Throws "initializer 'NAME': ..." for external data or an unsupported element type.
TensorBytes read_tensor_bytes(const onnx::TensorProto& proto);

// The box [offset, offset + extent) of `t`, per dim.
TensorBytes slice_tensor(const TensorBytes& t, const std::vector<std::int64_t>& offset,
                         const std::vector<std::int64_t>& extent);

// The parts joined along `dim` (every other dim equal), as ONNX Concat does.
TensorBytes concat_tensors(const std::vector<TensorBytes>& parts, int dim);

// A TensorProto named `name` holding `t` as raw_data.
onnx::TensorProto to_tensor_proto(const TensorBytes& t, const std::string& name);

// An int64 1-D tensor proto (Slice bounds, Reshape targets).
onnx::TensorProto int64_tensor(const std::string& name, const std::vector<std::int64_t>& values);

}  // namespace symtensor::compiler
