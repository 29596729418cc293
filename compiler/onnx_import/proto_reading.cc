#include "compiler/onnx_import/proto_reading.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <sys/stat.h>

namespace symtensor::compiler {

onnx::ModelProto read_model_file(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) throw std::runtime_error(path + ": no such file");
  if (S_ISDIR(st.st_mode)) throw std::runtime_error(path + ": is a directory, not an ONNX file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open for reading");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  onnx::ModelProto model;
  if (bytes.empty() || !model.ParseFromString(bytes))
    throw std::runtime_error(path + ": not an ONNX model (the protobuf does not parse; truncated or another format)");
  if (!model.has_graph())
    throw std::runtime_error(path + ": not an ONNX model (no graph)");
  return model;
}

void inline_external_data(onnx::ModelProto& model, const std::string& model_path) {
  const std::filesystem::path folder = std::filesystem::path(model_path).parent_path();
  for (auto& t : *model.mutable_graph()->mutable_initializer()) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) continue;
    std::string location;
    std::int64_t offset = 0, length = -1;
    for (const auto& kv : t.external_data()) {
      if (kv.key() == "location") location = kv.value();
      else if (kv.key() == "offset") offset = std::stoll(kv.value());
      else if (kv.key() == "length") length = std::stoll(kv.value());
    }
    const std::string what = model_path + ": initializer '" + t.name() + "'";
    if (location.empty()) throw std::runtime_error(what + ": external data without a location");
    const std::filesystem::path file = folder / location;
    std::ifstream in(file, std::ios::binary);
    if (!in) throw std::runtime_error(what + ": cannot read its external data file '" + file.string() + "'");
    in.seekg(0, std::ios::end);
    const std::int64_t size = in.tellg();
    if (length < 0) length = size - offset;
    if (offset < 0 || offset + length > size)
      throw std::runtime_error(what + ": bytes " + std::to_string(offset) + ".." + std::to_string(offset + length) +
                               " are past the end of '" + file.string() + "' (" + std::to_string(size) + " bytes)");
    std::string bytes(static_cast<std::size_t>(length), '\0');
    in.seekg(offset);
    in.read(bytes.data(), length);
    t.set_raw_data(std::move(bytes));
    t.clear_external_data();
    t.set_data_location(onnx::TensorProto::DEFAULT);
  }
}

namespace {

template <typename T>
std::vector<std::int64_t> from_raw(const std::string& raw) {
  std::vector<std::int64_t> out(raw.size() / sizeof(T));
  for (std::size_t i = 0; i < out.size(); ++i) {
    T v;
    std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
    out[i] = static_cast<std::int64_t>(v);
  }
  return out;
}

}  // namespace

std::optional<std::uint64_t> element_count(const onnx::TensorProto& t, std::uint64_t limit) {
  for (auto d : t.dims()) {
    if (d < 0) return std::nullopt;
    if (d == 0) return 0;
  }
  std::uint64_t count = 1;
  for (auto d : t.dims()) {
    const auto n = static_cast<std::uint64_t>(d);
    if (count > limit / n) return limit + 1;
    count *= n;
  }
  return count <= limit ? count : limit + 1;
}

std::optional<std::vector<std::int64_t>> read_integer_elements(const onnx::TensorProto& t,
                                                               std::size_t max_elements) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL) return std::nullopt;
  const std::optional<std::uint64_t> elements = element_count(t, max_elements);
  if (!elements || *elements > max_elements) return std::nullopt;
  const std::size_t count = *elements;
  const auto type = static_cast<onnx::TensorProto::DataType>(t.data_type());
  std::vector<std::int64_t> v;
  const bool raw = t.has_raw_data();
  switch (type) {
    case onnx::TensorProto::INT64:
      v = raw ? from_raw<std::int64_t>(t.raw_data()) : std::vector<std::int64_t>(t.int64_data().begin(), t.int64_data().end());
      break;
    case onnx::TensorProto::INT32:
      v = raw ? from_raw<std::int32_t>(t.raw_data()) : std::vector<std::int64_t>(t.int32_data().begin(), t.int32_data().end());
      break;
    case onnx::TensorProto::INT8:
      v = raw ? from_raw<std::int8_t>(t.raw_data()) : std::vector<std::int64_t>(t.int32_data().begin(), t.int32_data().end());
      break;
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::BOOL:
      v = raw ? from_raw<std::uint8_t>(t.raw_data()) : std::vector<std::int64_t>(t.int32_data().begin(), t.int32_data().end());
      break;
    case onnx::TensorProto::UINT64:
      v = raw ? from_raw<std::uint64_t>(t.raw_data()) : std::vector<std::int64_t>(t.uint64_data().begin(), t.uint64_data().end());
      break;
    default:
      return std::nullopt;
  }
  if (v.size() != count) return std::nullopt;
  return v;
}

std::optional<double> read_scalar(const onnx::TensorProto& t) {
  if (auto ints = read_integer_elements(t, 1); ints && ints->size() == 1) return static_cast<double>((*ints)[0]);
  if (t.data_location() == onnx::TensorProto::EXTERNAL) return std::nullopt;
  for (auto d : t.dims())
    if (d != 1) return std::nullopt;
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      if (t.float_data_size() == 1) return t.float_data(0);
      if (t.raw_data().size() == sizeof(float)) {
        float v;
        std::memcpy(&v, t.raw_data().data(), sizeof v);
        return v;
      }
      return std::nullopt;
    case onnx::TensorProto::DOUBLE:
      if (t.double_data_size() == 1) return t.double_data(0);
      if (t.raw_data().size() == sizeof(double)) {
        double v;
        std::memcpy(&v, t.raw_data().data(), sizeof v);
        return v;
      }
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

std::optional<Shape> shape_from_type(const onnx::TypeProto& type, SymbolTable& symbols) {
  if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return std::nullopt;
  Shape shape;
  for (const auto& dim : type.tensor_type().shape().dim()) {
    if (dim.has_dim_value()) {
      shape.push_back(GiNaC::numeric(static_cast<long>(dim.dim_value())));
    } else if (dim.has_dim_param() && !dim.dim_param().empty()) {
      // ONNX names unknown dims unk__N and reuses a name where one dim propagates.
      shape.push_back(symbols.get(dim.dim_param()));
    } else {
      shape.push_back(symbols.fresh());
    }
  }
  return shape;
}

Shape shape_from_dims(const google::protobuf::RepeatedField<std::int64_t>& dims) {
  Shape shape;
  for (auto d : dims) shape.push_back(GiNaC::numeric(static_cast<long>(d)));
  return shape;
}

}  // namespace symtensor::compiler
