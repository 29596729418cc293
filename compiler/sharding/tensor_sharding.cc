#include "compiler/sharding/tensor_sharding.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace symtensor::compiler {

TensorSharding TensorSharding::replicated(int rank) {
  TensorSharding s;
  s.dim_axes.resize(static_cast<std::size_t>(rank));
  return s;
}

int TensorSharding::dim_of(int axis) const {
  for (std::size_t d = 0; d < dim_axes.size(); ++d)
    if (std::find(dim_axes[d].begin(), dim_axes[d].end(), axis) != dim_axes[d].end()) return static_cast<int>(d);
  return -1;
}

bool TensorSharding::is_partial(int axis) const {
  return std::find(partial_axes.begin(), partial_axes.end(), axis) != partial_axes.end();
}

bool TensorSharding::fully_replicated() const {
  if (!partial_axes.empty()) return false;
  return std::all_of(dim_axes.begin(), dim_axes.end(), [](const auto& axes) { return axes.empty(); });
}

void TensorSharding::validate(const hardware::DeviceMesh& mesh) const {
  const int num_axes = static_cast<int>(mesh.axes().size());
  std::vector<int> uses(static_cast<std::size_t>(num_axes), 0);
  auto use = [&](int axis) {
    if (axis < 0 || axis >= num_axes)
      throw std::runtime_error("sharding uses mesh axis id " + std::to_string(axis) + " but the mesh has " +
                               std::to_string(num_axes) + " axes");
    if (++uses[static_cast<std::size_t>(axis)] > 1)
      throw std::runtime_error("sharding uses mesh axis '" + mesh.axes()[static_cast<std::size_t>(axis)].name +
                               "' more than once");
  };
  for (const auto& axes : dim_axes)
    for (int a : axes) use(a);
  for (int a : partial_axes) use(a);
  if (!std::is_sorted(partial_axes.begin(), partial_axes.end()))
    throw std::runtime_error("sharding's partial axes are not in mesh order");
}

namespace {

void print_axes(std::string& out, const std::vector<int>& axes, const hardware::DeviceMesh& mesh) {
  out += '{';
  for (std::size_t i = 0; i < axes.size(); ++i) {
    if (i) out += ',';
    out += mesh.axes().at(static_cast<std::size_t>(axes[i])).name;
  }
  out += '}';
}

// A cursor over the text; every error names the whole text and the column.
class Parser {
 public:
  Parser(std::string_view text, const hardware::DeviceMesh& mesh) : text_(text), mesh_(mesh) {}

  TensorSharding parse() {
    TensorSharding s;
    expect('[');
    skip_space();
    if (peek() != ']') {
      s.dim_axes.push_back(axis_list());
      while (skip_space(), peek() == ',') {
        ++pos_;
        s.dim_axes.push_back(axis_list());
      }
    }
    expect(']');
    skip_space();
    if (pos_ < text_.size()) {
      const std::string_view keyword = "partial";
      if (text_.substr(pos_, keyword.size()) != keyword) fail("expected 'partial{...}' or the end");
      pos_ += keyword.size();
      s.partial_axes = axis_list();
      std::sort(s.partial_axes.begin(), s.partial_axes.end());
      skip_space();
      if (pos_ < text_.size()) fail("unexpected text after the partial clause");
    }
    try {
      s.validate(mesh_);
    } catch (const std::exception& e) {
      throw std::runtime_error("sharding '" + std::string(text_) + "': " + e.what());
    }
    return s;
  }

 private:
  std::vector<int> axis_list() {
    std::vector<int> axes;
    expect('{');
    skip_space();
    if (peek() == '}') {
      ++pos_;
      return axes;
    }
    for (;;) {
      axes.push_back(axis_name());
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect('}');
      return axes;
    }
  }

  int axis_name() {
    skip_space();
    const std::size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
    if (pos_ == start) fail("expected a mesh axis name");
    const std::string name(text_.substr(start, pos_ - start));
    const int id = mesh_.axis_index(name);
    if (id < 0) {
      pos_ = start;
      fail("unknown mesh axis '" + name + "'");
    }
    return id;
  }

  void expect(char c) {
    skip_space();
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  [[noreturn]] void fail(const std::string& what) const {
    const std::string found = pos_ < text_.size() ? "'" + std::string(text_.substr(pos_, 12)) + "'" : "the end";
    throw std::runtime_error("sharding '" + std::string(text_) + "': " + what + " at column " +
                             std::to_string(pos_ + 1) + ", found " + found);
  }

  std::string_view text_;
  const hardware::DeviceMesh& mesh_;
  std::size_t pos_ = 0;
};

}  // namespace

std::string to_string(const TensorSharding& sharding, const hardware::DeviceMesh& mesh) {
  std::string out = "[";
  for (std::size_t d = 0; d < sharding.dim_axes.size(); ++d) {
    if (d) out += ',';
    print_axes(out, sharding.dim_axes[d], mesh);
  }
  out += "] partial";
  print_axes(out, sharding.partial_axes, mesh);
  return out;
}

TensorSharding parse_sharding(std::string_view text, const hardware::DeviceMesh& mesh) {
  return Parser(text, mesh).parse();
}

}  // namespace symtensor::compiler
