#include "compiler/rewrite/tensor_data.h"

#include <cstring>
#include <stdexcept>

namespace symtensor::compiler {
namespace {

std::size_t size_of(int data_type) {
  switch (data_type) {
    case onnx::TensorProto::FLOAT: case onnx::TensorProto::INT32: case onnx::TensorProto::UINT32: return 4;
    case onnx::TensorProto::DOUBLE: case onnx::TensorProto::INT64: case onnx::TensorProto::UINT64: return 8;
    case onnx::TensorProto::FLOAT16: case onnx::TensorProto::BFLOAT16:
    case onnx::TensorProto::INT16: case onnx::TensorProto::UINT16: return 2;
    case onnx::TensorProto::INT8: case onnx::TensorProto::UINT8: case onnx::TensorProto::BOOL: return 1;
    default: return 0;
  }
}

template <typename T, typename Field>
void append_field(std::string& out, const Field& field) {
  for (const auto& v : field) {
    const T x = static_cast<T>(v);
    out.append(reinterpret_cast<const char*>(&x), sizeof(T));
  }
}

}  // namespace

std::int64_t TensorBytes::elements() const {
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

TensorBytes read_tensor_bytes(const onnx::TensorProto& proto) {
  const std::string what = "initializer '" + proto.name() + "'";
  if (proto.data_location() == onnx::TensorProto::EXTERNAL)
    throw std::runtime_error(what + ": external data is not supported by the ONNX rewrite (load it inline first)");
  TensorBytes t;
  t.data_type = proto.data_type();
  t.dims.assign(proto.dims().begin(), proto.dims().end());
  t.element_size = size_of(t.data_type);
  if (t.element_size == 0) throw std::runtime_error(what + ": element type " + std::to_string(t.data_type) + " cannot be sliced");
  if (proto.has_raw_data()) {
    t.bytes = proto.raw_data();
  } else {
    switch (t.data_type) {
      case onnx::TensorProto::FLOAT: append_field<float>(t.bytes, proto.float_data()); break;
      case onnx::TensorProto::DOUBLE: append_field<double>(t.bytes, proto.double_data()); break;
      case onnx::TensorProto::INT64: append_field<std::int64_t>(t.bytes, proto.int64_data()); break;
      case onnx::TensorProto::UINT64: append_field<std::uint64_t>(t.bytes, proto.uint64_data()); break;
      case onnx::TensorProto::INT32: append_field<std::int32_t>(t.bytes, proto.int32_data()); break;
      case onnx::TensorProto::UINT32: append_field<std::uint32_t>(t.bytes, proto.uint64_data()); break;
      case onnx::TensorProto::INT16: append_field<std::int16_t>(t.bytes, proto.int32_data()); break;
      case onnx::TensorProto::UINT16: case onnx::TensorProto::FLOAT16: case onnx::TensorProto::BFLOAT16:
        append_field<std::uint16_t>(t.bytes, proto.int32_data()); break;
      case onnx::TensorProto::INT8: append_field<std::int8_t>(t.bytes, proto.int32_data()); break;
      case onnx::TensorProto::UINT8: case onnx::TensorProto::BOOL: append_field<std::uint8_t>(t.bytes, proto.int32_data()); break;
      default: break;
    }
  }
  if (static_cast<std::int64_t>(t.bytes.size()) != t.elements() * static_cast<std::int64_t>(t.element_size))
    throw std::runtime_error(what + ": holds " + std::to_string(t.bytes.size()) + " bytes, its shape needs " +
                             std::to_string(t.elements() * t.element_size));
  return t;
}

TensorBytes slice_tensor(const TensorBytes& t, const std::vector<std::int64_t>& offset,
                         const std::vector<std::int64_t>& extent) {
  const std::size_t rank = t.dims.size();
  if (offset.size() != rank || extent.size() != rank) throw std::runtime_error("slice_tensor: rank mismatch");
  for (std::size_t d = 0; d < rank; ++d)
    if (offset[d] < 0 || extent[d] < 0 || offset[d] + extent[d] > t.dims[d])
      throw std::runtime_error("slice_tensor: box outside the tensor on dim " + std::to_string(d));
  TensorBytes out;
  out.data_type = t.data_type;
  out.dims = extent;
  out.element_size = t.element_size;
  out.bytes.resize(static_cast<std::size_t>(out.elements()) * t.element_size);
  if (out.elements() == 0) return out;
  // Copy contiguous runs along the innermost dim.
  std::vector<std::int64_t> stride(rank, 1);
  for (std::size_t d = rank; d-- > 1;) stride[d - 1] = stride[d] * t.dims[d];
  const std::int64_t run = rank == 0 ? 1 : extent[rank - 1];
  const std::size_t run_bytes = static_cast<std::size_t>(run) * t.element_size;
  std::vector<std::int64_t> index(rank, 0);
  std::size_t written = 0;
  const std::int64_t runs = rank == 0 ? 1 : out.elements() / run;
  for (std::int64_t r = 0; r < runs; ++r) {
    std::int64_t src = 0;
    for (std::size_t d = 0; d < rank; ++d) src += (offset[d] + index[d]) * stride[d];
    std::memcpy(out.bytes.data() + written, t.bytes.data() + src * t.element_size, run_bytes);
    written += run_bytes;
    if (rank == 0) break;                          // a scalar is one run
    for (std::size_t d = rank - 1; d-- > 0;) {  // advance the outer dims (innermost handled by the run)
      if (++index[d] < extent[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

TensorBytes concat_tensors(const std::vector<TensorBytes>& parts, int dim) {
  if (parts.empty()) throw std::runtime_error("concat_tensors: no parts");
  TensorBytes out = parts.front();
  const auto rank = static_cast<int>(out.dims.size());
  if (dim < 0 || dim >= rank) throw std::runtime_error("concat_tensors: dim " + std::to_string(dim) + " out of range");
  out.dims[dim] = 0;
  for (const TensorBytes& p : parts) {
    for (int d = 0; d < rank; ++d)
      if (d != dim && (p.dims.size() != out.dims.size() || p.dims[d] != out.dims[d]))
        throw std::runtime_error("concat_tensors: parts differ on dim " + std::to_string(d));
    out.dims[dim] += p.dims[dim];
  }
  // Row-major: each part contributes, per index of the dims before `dim`, one run of
  // (its extent along dim) x (the elements after dim).
  std::int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= out.dims[d];
  for (int d = dim + 1; d < rank; ++d) inner *= out.dims[d];
  out.bytes.clear();
  out.bytes.reserve(static_cast<std::size_t>(out.elements()) * out.element_size);
  for (std::int64_t o = 0; o < outer; ++o)
    for (const TensorBytes& p : parts) {
      const std::size_t run = static_cast<std::size_t>(p.dims[dim] * inner) * p.element_size;
      out.bytes.append(p.bytes, static_cast<std::size_t>(o) * run, run);
    }
  return out;
}

onnx::TensorProto to_tensor_proto(const TensorBytes& t, const std::string& name) {
  onnx::TensorProto p;
  p.set_name(name);
  p.set_data_type(t.data_type);
  for (auto d : t.dims) p.add_dims(d);
  p.set_raw_data(t.bytes);
  return p;
}

onnx::TensorProto int64_tensor(const std::string& name, const std::vector<std::int64_t>& values) {
  onnx::TensorProto p;
  p.set_name(name);
  p.set_data_type(onnx::TensorProto::INT64);
  p.add_dims(static_cast<std::int64_t>(values.size()));
  for (auto v : values) p.add_int64_data(v);
  return p;
}

}  // namespace symtensor::compiler
