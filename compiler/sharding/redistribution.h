#pragma once
// Turning one sharding of a tensor into another with collectives on mesh axes.
//
//   partial -> replicated            all-reduce over the partial axes
//   partial -> split on dim d        reduce-scatter onto d
//   split on d -> replicated         all-gather of d
//   split on i -> split on j         all-to-all (same axes)
//   replicated -> split              local slice, no communication
//
// The planner applies these moves in the order that keeps the tensor smallest while it
// communicates: free slices first, then reduce-scatters, all-to-alls, all-reduces, and
// all-gathers last. Axes that take the same move onto the same dim form one collective over
// their combined group (collective_time's automatic choice includes the hierarchical
// algorithm, so one group over two levels is priced as its per-level phases). A dim's axes are major to minor, so only a dim's minor-most axes
// can leave it: a misplaced axis with axes after it is reached by gathering those first.
// Replicated/split -> partial is not a redistribution (it is an operator's choice) and throws.
#include <optional>
#include <string>
#include <vector>

#include "compiler/sharding/local_shape.h"
#include "compiler/sharding/tensor_sharding.h"
#include "hardware/collectives.h"

namespace symtensor::compiler {

enum class RedistributionKind { slice, all_reduce, reduce_scatter, all_gather, all_to_all };
std::string_view to_string(RedistributionKind kind);

struct RedistributionStep {
  RedistributionKind kind = RedistributionKind::slice;
  std::vector<int> axes;  // mesh axis ids of the group, major to minor
  int dim = -1;           // dim sliced / scattered onto / gathered; all-to-all: the source dim
  int to_dim = -1;        // all-to-all: the destination dim
  TensorSharding before, after;
  // S as nccl-tests defines it: all-reduce buffer, gathered all-gather output,
  // reduce-scatter input, all-to-all per-rank buffer (padding included); 0 for a slice.
  GiNaC::ex bytes;
  hardware::GroupShape group;

  std::optional<hardware::Collective> collective() const;  // nullopt for a slice
};

struct Redistribution {
  TensorSharding from, to;
  std::vector<GiNaC::ex> shape;  // global shape of the tensor
  GiNaC::ex element_bytes;
  AxisSizes axis_sizes;
  std::vector<RedistributionStep> steps;

  GiNaC::ex total_bytes() const;  // sum of the steps' S
};

// Throws (one line, both shardings in text) when `to` cannot be reached or either sharding
// does not fit the shape or the mesh.
Redistribution plan_redistribution(const TensorSharding& from, const TensorSharding& to,
                                   const std::vector<GiNaC::ex>& shape, const GiNaC::ex& element_bytes,
                                   const hardware::DeviceMesh& mesh);
// Same, with mesh axis sizes given as expressions (symbols for free sizes); group shapes
// still come from `mesh`.
Redistribution plan_redistribution(const TensorSharding& from, const TensorSharding& to,
                                   const std::vector<GiNaC::ex>& shape, const GiNaC::ex& element_bytes,
                                   const hardware::DeviceMesh& mesh, const AxisSizes& axis_sizes);

// Gradient shardings at the two ends of a forward redistribution (`to` end first), per axis:
// split stays split; a partial axis's gradient is replicated; an axis made replicated by
// an all-gather gets a partial gradient (each consumer contributes its part), while one
// made replicated by an all-reduce, or replicated throughout, gets a replicated gradient.
std::pair<TensorSharding, TensorSharding> gradient_shardings(const TensorSharding& from, const TensorSharding& to);

// The backward of `forward`: the redistribution between its gradient shardings, which gives
// all-gather <-> reduce-scatter, all-reduce <-> nothing, slice <-> all-gather,
// all-to-all <-> all-to-all, with the same bytes.
Redistribution plan_dual(const Redistribution& forward, const hardware::DeviceMesh& mesh);

// One line per step: "all_gather {gpu} dim 1: [{},{gpu}] partial{} -> [{},{}] partial{}, 4096 B".
std::string to_string(const Redistribution& r, const hardware::DeviceMesh& mesh);

}  // namespace symtensor::compiler
