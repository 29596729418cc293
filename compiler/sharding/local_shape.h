#pragma once
// The per-device piece of a tensor under a sharding, symbolically.
//
// Uneven splits are PADDED, as GSPMD does: a dim of extent d split n ways has local extent
// ceil(d/n) on every device, and the padded global extent n*ceil(d/n) is what collectives
// move (the padding's cost is in their bytes). When d or n is symbolic, ceil cannot be
// written, so the local extent is d/n and the dim is listed in `assumed_divisible`: the
// expression is exact only if n divides d, and `check_divisible` must be run once the
// symbols are bound (it throws naming the dim, never returns a wrong size silently).
#include <vector>

#include "compiler/sharding/tensor_sharding.h"
#include "hardware/symbolic.h"

namespace symtensor::compiler {

// Mesh axis sizes by axis id, as expressions: numbers from the mesh, or symbols a caller
// substitutes for some of them to keep a mesh size free.
using AxisSizes = std::vector<GiNaC::ex>;
AxisSizes numeric_axis_sizes(const hardware::DeviceMesh& mesh);

struct LocalShape {
  std::vector<GiNaC::ex> extents;        // per-device extent of each dim
  std::vector<GiNaC::ex> padded_global;  // extents[i] * shards of dim i (== global when even)
  std::vector<int> padded_dims;          // numeric dims whose split is uneven
  std::vector<int> assumed_divisible;    // dims whose extent d/n assumes n | d (symbolic d or n)

  bool even() const { return padded_dims.empty() && assumed_divisible.empty(); }
  GiNaC::ex elements() const;  // product of extents
};

// Product of the sizes of `axes`.
GiNaC::ex group_size(const std::vector<int>& axes, const AxisSizes& sizes);
// How many pieces dim `dim` is cut into.
GiNaC::ex shards_of_dim(const TensorSharding& sharding, int dim, const AxisSizes& sizes);

// Throws when the rank of `global` differs from the sharding's.
LocalShape local_shape(const std::vector<GiNaC::ex>& global, const TensorSharding& sharding, const AxisSizes& sizes);

// Devices that hold a copy of each element (of each partial summand when partial): the
// product of the sizes of the axes that neither split a dim nor hold partial sums.
GiNaC::ex replication_factor(const TensorSharding& sharding, const AxisSizes& sizes);

// After binding: throws naming the dim unless every `assumed_divisible` dim divides evenly
// (`bindings` maps the symbols of shape and axis sizes to numbers).
void check_divisible(const std::vector<GiNaC::ex>& global, const TensorSharding& sharding, const AxisSizes& sizes,
                     const GiNaC::exmap& bindings);

}  // namespace symtensor::compiler
