// A PyTorch script (2.6+ names: torch.distributed.tensor, torch.distributed.fsdp.fully_shard)
// that builds the device mesh and applies the plan's tensor parallelism with
// parallelize_module, keyed by the module names recovered from the ONNX node names, then
// FSDP2 (ZeRO-3) or replication over the data-parallel dim, and full recomputation.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "compiler/export/emitters.h"
#include "compiler/export/module_names.h"
#include "compiler/strategies/propagation.h"
#include "compiler/analysis/transformer_structure.h"

namespace symtensor::compiler {
namespace {

struct TpEntry {
  std::string module, style;
};

void add_entry(std::vector<TpEntry>& plan, const std::optional<std::string>& module, const std::string& style) {
  if (!module) return;
  for (const auto& e : plan)
    if (e.module == *module) return;  // first style wins (a bias Add after its MatMul has the same scope)
  plan.push_back({*module, style});
}

}  // namespace

std::string emit_dtensor(const ExportContext& c) {
  const ParallelRecipe& r = c.recipe;
  const std::vector<IterationSpace> spaces = node_iteration_spaces(c.graph);
  const TransformerStructure st = find_transformer_structure(c.graph, spaces);
  const bool sp = r.sp && r.tp > 1;
  std::vector<TpEntry> tp;
  std::vector<std::string> layers;
  const auto name = [&](NodeId n) { return module_of_node(c.graph, n, true); };
  if (r.tp > 1) {
    for (NodeId n : st.embeddings)
      add_entry(tp, name(n), sp ? "RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1))"
                                : "RowwiseParallel(input_layouts=Replicate())");
    if (sp)
      for (NodeId n = 0; n < static_cast<NodeId>(c.graph.nodes().size()); ++n)
        if (st.norm_region[n] >= 0) add_entry(tp, module_of_node(c.graph, n, false), "SequenceParallel()");
    for (NodeId n : st.column) add_entry(tp, name(n), sp ? "ColwiseParallel(input_layouts=Shard(1))" : "ColwiseParallel()");
    for (NodeId n : st.row) add_entry(tp, name(n), sp ? "RowwiseParallel(output_layouts=Shard(1))" : "RowwiseParallel()");
    for (NodeId n : st.vocab_heads)
      add_entry(tp, name(n), sp ? "ColwiseParallel(input_layouts=Shard(1), output_layouts=Replicate())"
                                : "ColwiseParallel(output_layouts=Replicate())");
  }
  for (NodeId n : st.column)
    if (const auto m = name(n))
      if (const auto l = layer_module(*m); l && std::find(layers.begin(), layers.end(), *l) == layers.end()) layers.push_back(*l);

  std::string s = "#!/usr/bin/env python3\n" + comment_block(c.header, "# ");
  s += fmt::format("# run: torchrun --nnodes {} --nproc-per-node {} THIS_FILE (import it and call parallelize(model, build_mesh()))\n",
                   r.nodes, r.gpus_per_node);
  s += "import torch\n";
  s += "from torch.distributed.device_mesh import init_device_mesh\n";
  s += "from torch.distributed.tensor import Replicate, Shard\n";
  s += "from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, SequenceParallel, parallelize_module\n";
  s += "from torch.distributed.fsdp import fully_shard\n";
  s += "from torch.distributed._composable.replicate import replicate\n";
  s += "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper\n\n";
  s += fmt::format("MESH_SHAPE = ({}, {})\n", r.dp, r.tp);
  s += "MESH_DIM_NAMES = (\"dp\", \"tp\")\n";
  s += fmt::format("FULLY_SHARD = {}  # ZeRO-3 over dp\n", r.zero_stage == 3 ? "True" : "False");
  s += fmt::format("RECOMPUTE_LAYERS = {}  # full activation recomputation per layer\n",
                   r.recompute != RecomputePolicy::none ? "True" : "False");
  s += "LAYERS = [\n";
  for (const auto& l : layers) s += fmt::format("    \"{}\",\n", l);
  s += "]\n\n\ndef tp_plan():\n    return {\n";
  for (const auto& e : tp) s += fmt::format("        \"{}\": {},\n", e.module, e.style);
  s += "    }\n\n\n";
  s += "def build_mesh(device_type=\"cuda\"):\n";
  s += "    return init_device_mesh(device_type, MESH_SHAPE, mesh_dim_names=MESH_DIM_NAMES)\n\n\n";
  s += "def _replace(model, fqn, module):\n";
  s += "    parent, _, child = fqn.rpartition(\".\")\n";
  s += "    setattr(model.get_submodule(parent) if parent else model, child, module)\n\n\n";
  s += "def parallelize(model, mesh):\n";
  s += "    if MESH_SHAPE[1] > 1:\n";
  s += "        parallelize_module(model, mesh[\"tp\"], tp_plan())\n";
  s += "    if RECOMPUTE_LAYERS:\n";
  s += "        for fqn in LAYERS:\n";
  s += "            _replace(model, fqn, checkpoint_wrapper(model.get_submodule(fqn)))\n";
  s += "    if FULLY_SHARD:\n";
  s += "        for fqn in LAYERS:\n";
  s += "            fully_shard(model.get_submodule(fqn), mesh=mesh[\"dp\"])\n";
  s += "        fully_shard(model, mesh=mesh[\"dp\"])\n";
  s += "    elif MESH_SHAPE[0] > 1:\n";
  s += "        replicate(model, device_mesh=mesh[\"dp\"])\n";
  s += "    return model\n";
  return s;
}

}  // namespace symtensor::compiler
