// JAX: the plan's mesh and a PartitionSpec per parameter and per graph input (the sharding
// the plan gives each where it is first used; ZeRO-3 adds the data-parallel axes to a
// parameter's first unsplit dim), plus the recomputation policy for jax.checkpoint.
#include <fmt/format.h>

#include "compiler/export/emitters.h"
#include "compiler/sharding/cut_sharding.h"
#include "compiler/strategies/propagation.h"

namespace symtensor::compiler {
namespace {

std::string spec_text(const TensorSharding& sh, const hardware::DeviceMesh& mesh) {
  std::string s = "P(";
  for (int d = 0; d < sh.rank(); ++d) {
    const auto& axes = sh.dim_axes[d];
    s += d ? ", " : "";
    if (axes.empty()) {
      s += "None";
    } else if (axes.size() == 1) {
      s += "\"" + mesh.axes()[axes[0]].name + "\"";
    } else {
      s += "(";
      for (std::size_t i = 0; i < axes.size(); ++i) s += (i ? ", " : "") + ("\"" + mesh.axes()[axes[i]].name + "\"");
      s += ")";
    }
  }
  return s + ")";
}

// The sharding of `t` as its first consumer reads it.
std::optional<TensorSharding> first_use(const Graph& g, const Plan& plan, const std::vector<IterationSpace>& spaces, TensorId t) {
  for (NodeId n : g.tensor(t).consumers) {
    const Node& node = g.node(n);
    for (std::size_t i = 0; i < node.inputs.size(); ++i)
      if (node.inputs[i] == t && i < spaces[n].input_dims.size())
        return input_sharding(spaces[n], plan.node_cuts[n], static_cast<int>(i));
  }
  return std::nullopt;
}

}  // namespace

std::string emit_jax(const ExportContext& c) {
  const ParallelRecipe& r = c.recipe;
  const hardware::DeviceMesh mesh = plan_mesh(c.plan, c.cluster);
  const std::vector<IterationSpace> spaces = node_iteration_spaces(c.graph);
  std::string s = comment_block(c.header, "# ");
  s += "import numpy as np\nimport jax\nfrom jax.sharding import Mesh, NamedSharding, PartitionSpec as P\n\n";
  std::string names, sizes;
  for (const auto& a : mesh.axes()) {
    names += fmt::format("\"{}\", ", a.name);
    sizes += fmt::format("{}, ", a.size);
  }
  s += fmt::format("MESH_AXES = ({})\nMESH_SHAPE = ({})\n", names, sizes);
  const char* policy = r.recompute == RecomputePolicy::full        ? "jax.checkpoint_policies.nothing_saveable"
                       : r.recompute == RecomputePolicy::selective ? "jax.checkpoint_policies.dots_with_no_batch_dims_saveable"
                                                                   : "None";
  s += fmt::format("REMAT_POLICY = {}  # jax.checkpoint(layer, policy=REMAT_POLICY) when not None\n\n", policy);
  const auto specs = [&](bool parameters) {
    std::string out;
    for (TensorId t = 0; t < static_cast<TensorId>(c.graph.tensors().size()); ++t) {
      const Tensor& tensor = c.graph.tensor(t);
      if (parameters ? !tensor.is_parameter : (!tensor.is_graph_input || tensor.is_parameter || tensor.is_constant)) continue;
      auto sh = first_use(c.graph, c.plan, spaces, t);
      if (!sh) continue;
      if (parameters && r.zero_stage == 3) {
        for (int d = 0; d < sh->rank(); ++d)
          if (sh->dim_axes[d].empty()) {
            for (int a : r.dp_axes)
              if (sh->dim_of(a) < 0) sh->dim_axes[d].push_back(a);
            break;
          }
      }
      out += fmt::format("    \"{}\": {},\n", tensor.name, spec_text(*sh, mesh));
    }
    return out;
  };
  s += "PARAM_SPECS = {\n" + specs(true) + "}\n\n";
  s += "INPUT_SPECS = {\n" + specs(false) + "}\n\n\n";
  s += "def make_mesh(devices=None):\n";
  s += "    devices = np.array(jax.devices() if devices is None else devices).reshape(MESH_SHAPE)\n";
  s += "    return Mesh(devices, MESH_AXES)\n\n\n";
  s += "def shardings(mesh, specs=PARAM_SPECS):\n";
  s += "    return {name: NamedSharding(mesh, spec) for name, spec in specs.items()}\n";
  return s;
}

}  // namespace symtensor::compiler
