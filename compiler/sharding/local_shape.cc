#include "compiler/sharding/local_shape.h"

#include <sstream>
#include <stdexcept>
#include <string>

namespace symtensor::compiler {

namespace {

bool is_positive_integer(const GiNaC::ex& e) {
  return GiNaC::is_a<GiNaC::numeric>(e) && e.info(GiNaC::info_flags::posint);
}

std::string str(const GiNaC::ex& e) {
  std::ostringstream os;
  os << e;
  return os.str();
}

}  // namespace

AxisSizes numeric_axis_sizes(const hardware::DeviceMesh& mesh) {
  AxisSizes sizes;
  for (const auto& axis : mesh.axes()) sizes.push_back(GiNaC::numeric(axis.size));
  return sizes;
}

GiNaC::ex LocalShape::elements() const {
  GiNaC::ex n = 1;
  for (const auto& e : extents) n *= e;
  return n;
}

GiNaC::ex group_size(const std::vector<int>& axes, const AxisSizes& sizes) {
  GiNaC::ex n = 1;
  for (int a : axes) {
    if (a < 0 || static_cast<std::size_t>(a) >= sizes.size())
      throw std::runtime_error("mesh axis id " + std::to_string(a) + " has no size (" + std::to_string(sizes.size()) +
                               " axis sizes given)");
    n *= sizes[static_cast<std::size_t>(a)];
  }
  return n;
}

GiNaC::ex shards_of_dim(const TensorSharding& sharding, int dim, const AxisSizes& sizes) {
  return group_size(sharding.dim_axes.at(static_cast<std::size_t>(dim)), sizes);
}

LocalShape local_shape(const std::vector<GiNaC::ex>& global, const TensorSharding& sharding, const AxisSizes& sizes) {
  if (global.size() != sharding.dim_axes.size())
    throw std::runtime_error("sharding has " + std::to_string(sharding.rank()) + " dims but the tensor has " +
                             std::to_string(global.size()));
  LocalShape local;
  for (std::size_t d = 0; d < global.size(); ++d) {
    const GiNaC::ex n = shards_of_dim(sharding, static_cast<int>(d), sizes);
    const GiNaC::ex& extent = global[d];
    if (is_positive_integer(extent) && is_positive_integer(n)) {
      const auto& num = GiNaC::ex_to<GiNaC::numeric>(extent);
      const auto& den = GiNaC::ex_to<GiNaC::numeric>(n);
      const GiNaC::numeric piece = GiNaC::iquo(num + den - 1, den);  // ceil(d/n)
      if (piece * den != num) local.padded_dims.push_back(static_cast<int>(d));
      local.extents.push_back(piece);
      local.padded_global.push_back(piece * den);
      continue;
    }
    if (!GiNaC::is_a<GiNaC::numeric>(n) || !n.is_equal(1)) {
      // Divisibility of a symbolic extent is unknowable here; a numeric non-integer is a bug upstream.
      if (GiNaC::is_a<GiNaC::numeric>(extent) && !is_positive_integer(extent))
        throw std::runtime_error("tensor dim " + std::to_string(d) + " has non-integral extent " + str(extent));
      local.assumed_divisible.push_back(static_cast<int>(d));
    }
    local.extents.push_back(extent / n);
    local.padded_global.push_back(extent);
  }
  return local;
}

GiNaC::ex replication_factor(const TensorSharding& sharding, const AxisSizes& sizes) {
  GiNaC::ex n = 1;
  for (std::size_t a = 0; a < sizes.size(); ++a)
    if (sharding.replicates(static_cast<int>(a))) n *= sizes[a];
  return n;
}

void check_divisible(const std::vector<GiNaC::ex>& global, const TensorSharding& sharding, const AxisSizes& sizes,
                     const GiNaC::exmap& bindings) {
  const LocalShape local = local_shape(global, sharding, sizes);
  for (int d : local.assumed_divisible) {
    const GiNaC::ex extent = global[static_cast<std::size_t>(d)].subs(bindings);
    const GiNaC::ex n = shards_of_dim(sharding, d, sizes).subs(bindings);
    if (!is_positive_integer(extent) || !is_positive_integer(n))
      throw std::runtime_error("tensor dim " + std::to_string(d) + " (" + str(global[static_cast<std::size_t>(d)]) +
                               " split " + str(shards_of_dim(sharding, d, sizes)) + " ways) is still symbolic after binding");
    if (!GiNaC::irem(GiNaC::ex_to<GiNaC::numeric>(extent), GiNaC::ex_to<GiNaC::numeric>(n)).is_zero())
      throw std::runtime_error("tensor dim " + std::to_string(d) + " (" + str(global[static_cast<std::size_t>(d)]) +
                               " = " + str(extent) + ") does not split evenly " + str(n) +
                               " ways; its symbolic local extent assumed it did");
  }
}

}  // namespace symtensor::compiler
