#pragma once
// Float constants of an ONNX file by tensor name (initializers and Constant nodes' values),
// which the IR does not keep: it holds the shapes and small integer values only. Read
// lazily from the file the graph was imported from; external data is never read.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace symtensor::compiler {

class FloatConstants {
 public:
  // `model_path`: the ONNX file; an unreadable one gives no values (the caller names the
  // facts it could not find).
  explicit FloatConstants(const std::string& model_path);
  // Elements of the float/double constant `name` held inline, at most `limit`; nullopt
  // when absent, external, of another type or larger.
  std::optional<std::vector<double>> values(const std::string& name, std::size_t limit = 65536) const;

 private:
  onnx::ModelProto model_;
  std::map<std::string, const onnx::TensorProto*> by_name_;
  std::map<std::string, double> scalar_attributes_;  // Constant value_float
};

}  // namespace symtensor::compiler
