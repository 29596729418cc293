#pragma once
// How a tensor lies on a device mesh (as in GSPMD / Shardy / DTensor): for each tensor
// dimension the mesh axes that split it, major to minor, plus the mesh axes on which the
// tensor holds partial sums. Every other mesh axis replicates it.
//
// Text form, axis names from the mesh:  [{node},{},{gpu}] partial{}
//   `[{node,gpu}] partial{}`  dim 0 split 8 ways, node-major;  `[{},{}] partial{gpu}`  a
//   partial sum over gpu. print(parse(t)) == t for text in this canonical form (no spaces
//   inside the brackets, partial axes in mesh order, partial clause always printed);
//   parse also accepts spaces and an omitted partial clause (meaning no partial axes).
#include <string>
#include <string_view>
#include <vector>

#include "hardware/device_mesh.h"

namespace symtensor::compiler {

struct TensorSharding {
  std::vector<std::vector<int>> dim_axes;  // per tensor dim: mesh axis ids, major to minor
  std::vector<int> partial_axes;           // mesh axis ids, ascending

  static TensorSharding replicated(int rank);

  int rank() const { return static_cast<int>(dim_axes.size()); }
  // The tensor dim that `axis` splits, or -1.
  int dim_of(int axis) const;
  bool is_partial(int axis) const;
  // Neither splits a dim nor holds partial sums.
  bool replicates(int axis) const { return dim_of(axis) < 0 && !is_partial(axis); }
  bool fully_replicated() const;

  // Throws (one line) unless every axis id exists in `mesh` and is used at most once.
  void validate(const hardware::DeviceMesh& mesh) const;

  friend bool operator==(const TensorSharding&, const TensorSharding&) = default;
  friend auto operator<=>(const TensorSharding&, const TensorSharding&) = default;
};

std::string to_string(const TensorSharding& sharding, const hardware::DeviceMesh& mesh);
// Throws std::runtime_error naming the offending text and its column.
TensorSharding parse_sharding(std::string_view text, const hardware::DeviceMesh& mesh);

}  // namespace symtensor::compiler
