#include "compiler/rewrite/sharded_program.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "compiler/analysis/model_stats.h"
#include "compiler/fusion/unfuse_plan.h"
#include "compiler/ops/op_semantics.h"
#include "compiler/rewrite/split_blocks.h"
#include "compiler/rewrite/tensor_data.h"
#include "compiler/sharding/cut_sharding.h"

namespace symtensor::compiler {
namespace {

std::string text_of(const GiNaC::ex& e) {
  std::ostringstream os;
  os << e;
  return os.str();
}

std::int64_t bound_int(const Graph& g, const GiNaC::ex& e, const std::string& what) {
  const GiNaC::ex v = g.symbols.substitute(e);
  if (!GiNaC::is_a<GiNaC::numeric>(v) || !GiNaC::ex_to<GiNaC::numeric>(v).is_integer())
    throw std::runtime_error(what + ": '" + text_of(e) +
                             "' is not bound to an integer (bind every dim, e.g. --bind batch=2,seq=8)");
  return GiNaC::ex_to<GiNaC::numeric>(v).to_long();
}

// Input of a node that carries the (global) shape of its output.
bool is_shape_input(const Node& n, std::size_t input) {
  if (!n.domain.empty()) return false;
  return (n.op_type == "Reshape" && input == 1) || (n.op_type == "Expand" && input == 1) ||
         (n.op_type == "ConstantOfShape" && input == 0) || (n.op_type == "Resize" && input == 3);
}

class Builder {
 public:
  Builder(const onnx::ModelProto& model, Graph& graph, const Plan& plan, const hardware::Cluster& cluster,
          Mutation mutation, const KeptOutputs& kept)
      : model_(model), g_(graph), plan_(plan), kept_(kept) {
    p_.mesh = plan_mesh(plan, cluster);
    p_.pipeline_axis = plan.pipeline_axis;
    p_.stages = plan.pipeline_stages();
    p_.bindings = graph.symbols.bound_values();
    p_.mutation = mutation;
    sizes_ = numeric_axis_sizes(p_.mesh);
  }

  ShardedProgram run() {
    const std::size_t nodes = g_.nodes().size();
    if (plan_.stage_of_node.size() != nodes || plan_.node_cuts.size() != nodes)
      throw std::runtime_error("rewrite: the plan covers " + std::to_string(plan_.node_cuts.size()) +
                               " nodes, the graph has " + std::to_string(nodes));
    if (model_.graph().node_size() != static_cast<int>(nodes))
      throw std::runtime_error("rewrite: the model proto has " + std::to_string(model_.graph().node_size()) +
                               " nodes, the graph " + std::to_string(nodes) + " (not the model it was imported from?)");
    home_.assign(g_.tensors().size(), -1);
    find_folded();
    const std::vector<NodeId> order = g_.topological_order();
    find_live(order);
    blocks_ = find_split_blocks(g_, plan_, p_.mesh, live_, [this](TensorId t) { return global_shape(t); });
    for (NodeId n : order)
      if (live_[n]) add_node(n);
    for (TensorId t : g_.outputs) {
      const int v = home_value(t, TensorSharding::replicated(static_cast<int>(g_.tensor(t).shape.size())),
                               p_.stages - 1);
      p_.outputs.emplace_back(g_.tensor(t).name, reshard(v, returned_sharding(t), std::max(p_.values[v].stage, 0)));
    }
    return std::move(p_);
  }

 private:
  // Replicated, or for a kept output (KeptOutputs) its input's sharding less pending sums.
  TensorSharding returned_sharding(TensorId t) {
    const Tensor& out = g_.tensor(t);
    const auto it = kept_.find(out.name);
    if (it == kept_.end()) return TensorSharding::replicated(static_cast<int>(out.shape.size()));
    const TensorId in = g_.find_tensor(it->second);
    if (in == kNone || !g_.tensor(in).is_graph_input || home_[in] < 0)
      throw std::runtime_error("rewrite: output '" + out.name + "' is to keep the sharding of input '" + it->second +
                               "', which is not a graph input the program reads");
    TensorSharding s = p_.values[home_[in]].sharding;
    s.partial_axes.clear();
    if (s.rank() != static_cast<int>(out.shape.size()))
      throw std::runtime_error("rewrite: output '" + out.name + "' has rank " + std::to_string(out.shape.size()) +
                               ", input '" + it->second + "' rank " + std::to_string(s.rank()));
    return s;
  }

  void find_folded() {
    folded_.assign(g_.tensors().size(), false);
    for (std::size_t t = 0; t < g_.tensors().size(); ++t) {
      const Tensor& tensor = g_.tensor(static_cast<TensorId>(t));
      if (!tensor.value || tensor.is_graph_input) continue;
      bool numeric = true;
      for (const auto& e : *tensor.value) numeric = numeric && GiNaC::is_a<GiNaC::numeric>(g_.symbols.substitute(e));
      for (const auto& e : tensor.shape) numeric = numeric && GiNaC::is_a<GiNaC::numeric>(g_.symbols.substitute(e));
      folded_[t] = numeric;
    }
  }

  // Nodes whose non-folded outputs reach a graph output; Constant nodes become data.
  void find_live(const std::vector<NodeId>& order) {
    live_.assign(g_.nodes().size(), false);
    std::vector<bool> needed(g_.tensors().size(), false);
    for (TensorId t : g_.outputs) needed[t] = true;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const Node& n = g_.node(*it);
      bool live = false;
      for (TensorId o : n.outputs) live = live || (o != kNone && needed[o] && !folded_[o]);
      if (!live || (n.op_type == "Constant" && n.domain.empty())) continue;
      live_[*it] = true;
      for (std::size_t i = 0; i < n.inputs.size(); ++i)
        if (n.inputs[i] != kNone && !is_shape_input(n, i)) needed[n.inputs[i]] = true;
    }
  }

  std::vector<std::int64_t> global_shape(TensorId t) {
    const Tensor& tensor = g_.tensor(t);
    if (!tensor.shape_known) throw std::runtime_error("rewrite: tensor '" + tensor.name + "' has no known shape");
    std::vector<std::int64_t> s;
    for (const auto& e : tensor.shape) s.push_back(bound_int(g_, e, "rewrite: tensor '" + tensor.name + "'"));
    return s;
  }

  int add_value(ShardedValue v) {
    if (v.tensor != kNone && blocks_[v.tensor].dim >= 0 && v.blocked_dim < 0) {
      const DimBlocks& b = blocks_[v.tensor];
      if (b.dim < v.sharding.rank() && v.sharding.dim_axes[b.dim] == b.axes) {
        v.blocked_dim = b.dim;
        v.blocks = b.sizes;
      }
    }
    v.local_shape = v.global_shape;
    for (int d = 0; d < v.sharding.rank() && d < static_cast<int>(v.global_shape.size()); ++d) {
      std::int64_t shards = 1;
      for (int a : v.sharding.dim_axes[d]) shards *= p_.mesh.axes().at(a).size;
      if (v.global_shape[d] % shards != 0)
        throw std::runtime_error("rewrite: tensor '" + v.name + "' dim " + std::to_string(d) + " of extent " +
                                 std::to_string(v.global_shape[d]) + " is split " + std::to_string(shards) +
                                 " ways unevenly (the ONNX rewrite needs even splits)");
      v.local_shape[d] = v.global_shape[d] / shards;
    }
    if (v.sharding.rank() != static_cast<int>(v.global_shape.size()))
      throw std::runtime_error("rewrite: tensor '" + v.name + "' has rank " + std::to_string(v.global_shape.size()) +
                               ", its sharding rank " + std::to_string(v.sharding.rank()));
    p_.values.push_back(std::move(v));
    return static_cast<int>(p_.values.size()) - 1;
  }

  const onnx::TensorProto* constant_node_data(const Node& n, const Tensor& t) {
    const auto& np = model_.graph().node(static_cast<int>(&n - g_.nodes().data()));
    for (const auto& a : np.attribute()) {
      if (a.name() == "value" && a.has_t()) {
        p_.owned_data.push_back(a.t());
      } else if (a.name() == "value_float" || a.name() == "value_floats") {
        onnx::TensorProto p;
        p.set_data_type(onnx::TensorProto::FLOAT);
        if (a.name() == "value_float") p.add_float_data(a.f());
        else {
          p.add_dims(a.floats_size());
          for (float f : a.floats()) p.add_float_data(f);
        }
        p_.owned_data.push_back(p);
      } else {
        continue;
      }
      p_.owned_data.back().set_name(t.name);
      return &p_.owned_data.back();
    }
    throw std::runtime_error("rewrite: Constant node '" + n.name + "' has no value the rewrite can read");
  }

  const onnx::TensorProto* folded_data(const Tensor& t) {
    onnx::TensorProto p;
    p.set_name(t.name);
    p.set_data_type(static_cast<int>(t.dtype));
    for (const auto& e : t.shape) p.add_dims(bound_int(g_, e, "rewrite: tensor '" + t.name + "'"));
    for (const auto& e : *t.value) {
      const std::int64_t v = bound_int(g_, e, "rewrite: value of '" + t.name + "'");
      if (t.dtype == ElementType::i64) p.add_int64_data(v);
      else if (t.dtype == ElementType::f32) p.add_float_data(static_cast<float>(v));
      else if (t.dtype == ElementType::f64) p.add_double_data(static_cast<double>(v));
      else p.add_int32_data(static_cast<std::int32_t>(v));
    }
    p_.owned_data.push_back(std::move(p));
    return &p_.owned_data.back();
  }

  // The value carrying tensor `t` as produced; sources take the sharding `wanted` (partials dropped).
  int home_value(TensorId t, TensorSharding wanted, int stage) {
    if (home_[t] >= 0) return home_[t];
    const Tensor& tensor = g_.tensor(t);
    ShardedValue v;
    v.name = tensor.name;
    v.tensor = t;
    v.global_shape = global_shape(t);
    v.elem_type = static_cast<int>(tensor.dtype);
    v.stage = stage;
    if (!holds_weight_data(g_, t)) wanted.partial_axes.clear();  // only weight data can be held as a partial sum (holds_data)
    if (folded_[t]) {
      v.origin = ValueOrigin::folded_constant;
      v.sharding = TensorSharding::replicated(static_cast<int>(v.global_shape.size()));
      v.data = folded_data(tensor);
      v.stage = -1;  // available in every stage
    } else if (tensor.initializer.proto_index >= 0) {
      v.origin = ValueOrigin::initializer;
      v.sharding = wanted;
      v.data = &model_.graph().initializer(tensor.initializer.proto_index);
      v.stage = -1;
    } else if (tensor.producer != kNone && g_.node(tensor.producer).op_type == "Constant") {
      v.origin = ValueOrigin::initializer;
      v.sharding = wanted;
      v.data = constant_node_data(g_.node(tensor.producer), tensor);
      v.stage = -1;
    } else if (tensor.is_graph_input) {
      v.origin = ValueOrigin::graph_input;
      v.sharding = wanted;
      v.stage = -1;
    } else {
      throw std::runtime_error("rewrite: tensor '" + tensor.name + "' is read before any node produces it");
    }
    if (v.elem_type == 0 && v.data) v.elem_type = v.data->data_type();
    home_[t] = add_value(std::move(v));
    return home_[t];
  }

  int reshard(int value, const TensorSharding& target, int stage) {
    if (p_.values[value].sharding == target) return value;
    const std::string key = std::to_string(value) + "|" + to_string(target, p_.mesh) + "|" + std::to_string(stage);
    if (auto it = resharded_.find(key); it != resharded_.end()) return it->second;
    const ShardedValue from = p_.values[value];
    std::vector<GiNaC::ex> shape;
    for (auto d : from.global_shape) shape.push_back(GiNaC::numeric(static_cast<long>(d)));
    const Redistribution r = plan_redistribution(from.sharding, target, shape, GiNaC::numeric(4), p_.mesh);
    int current = value;
    for (const RedistributionStep& step : r.steps) {
      if (from.tensor != kNone && blocks_[from.tensor].dim >= 0 && step.kind != RedistributionKind::all_reduce &&
          (step.dim == blocks_[from.tensor].dim || step.to_dim == blocks_[from.tensor].dim))
        throw std::runtime_error("rewrite: tensor '" + from.name + "' holds the parts of the cut Split '" +
                                 g_.node(blocks_[from.tensor].split).name + "' along dim " +
                                 std::to_string(blocks_[from.tensor].dim) + "; a " + std::string(to_string(step.kind)) +
                                 " of that dim is not supported");
      ShardedValue v = from;
      v.name = from.name + "__" + std::string(to_string(step.kind)) + std::to_string(++counter_);
      v.origin = ValueOrigin::collective;
      v.sharding = step.after;
      v.stage = stage;
      v.data = nullptr;
      const int next = add_value(std::move(v));
      ProgramStep ps;
      ps.kind = ProgramStep::Kind::collective;
      ps.stage = stage;
      ps.inputs = {current};
      ps.outputs = {next};
      ps.redistribution = step;
      p_.steps.push_back(std::move(ps));
      current = next;
    }
    resharded_[key] = current;
    return current;
  }

  void add_node(NodeId id) {
    const Node& n = g_.node(id);
    const int stage = plan_.stage_of_node[id];
    if (stage < 0 || stage >= p_.stages)
      throw std::runtime_error("rewrite: node '" + n.name + "' is in stage " + std::to_string(stage) + " of " +
                               std::to_string(p_.stages));
    const IterationSpace space = iteration_space_of(g_, id);
    const NodeCut& cut = plan_.node_cuts[id];
    for (const auto& axes : cut.loop_axes)
      for (int a : axes)
        if (a == p_.pipeline_axis) throw std::runtime_error("rewrite: node '" + n.name + "' is cut on the pipeline axis");
    if (auto problem = cut_rewrite_problem(g_, id, space, cut))
      throw std::runtime_error("rewrite: node '" + n.name + "' (" + n.op_type + "): " + *problem);
    const bool any_cut = std::any_of(cut.loop_axes.begin(), cut.loop_axes.end(), [](const auto& a) { return !a.empty(); });

    ProgramStep step;
    step.kind = ProgramStep::Kind::node;
    step.stage = stage;
    step.node = id;
    // A cut Split axis: each rank splits its blocks (split_blocks.h) into its chunk of every part.
    const int split_axis = cut_split_axis_loop(g_, id, cut);
    std::vector<std::int64_t> local_parts;
    if (split_axis >= 0) {
      const int ways = p_.mesh.group_shape(cut.loop_axes[split_axis]).size();
      for (std::int64_t size : blocks_[n.inputs[0]].sizes) local_parts.push_back(size / ways);
    }
    const std::vector<int> whole = unevenly_merged_loops(n, space, cut);
    std::vector<int> outputs;
    for (std::size_t o = 0; o < n.outputs.size(); ++o) {
      if (n.outputs[o] == kNone) {
        outputs.push_back(-1);
        continue;
      }
      const TensorId t = n.outputs[o];
      ShardedValue v;
      v.name = g_.tensor(t).name;
      v.tensor = t;
      v.global_shape = global_shape(t);
      v.elem_type = static_cast<int>(g_.tensor(t).dtype);
      v.stage = stage;
      v.sharding = any_cut && o < space.output_dims.size() ? output_sharding(space, cut, static_cast<int>(o))
                                                            : TensorSharding::replicated(static_cast<int>(v.global_shape.size()));
      if (split_axis >= 0) v.sharding.dim_axes.at(split_axis) = cut.loop_axes[split_axis];
      if (o == 0 && any_cut &&
          (n.op_type == "Reshape" || n.op_type == "Flatten" || n.op_type == "Concat" || n.op_type == "Slice")) {
        TensorSharding reshaped = computed_sharding(space, v.sharding, whole);
        if (reshaped != v.sharding) {
          sliced_output_ = v.sharding;
          v.sharding = std::move(reshaped);
          v.name += "__unsliced";
        }
      }
      outputs.push_back(-2 - static_cast<int>(o));  // placeholder until inputs are wired
      pending_.push_back(std::move(v));
    }
    for (std::size_t i = 0; i < n.inputs.size(); ++i) {
      const TensorId t = n.inputs[i];
      if (t == kNone) {
        step.inputs.push_back(-1);
        continue;
      }
      if (is_shape_input(n, i)) {
        step.inputs.push_back(local_shape_constant(n, pending_.at(0)));
        continue;
      }
      if (split_axis >= 0 && i == 1) {  // the `split` sizes input
        step.inputs.push_back(local_constant(n.name + "__local_split", local_parts));
        continue;
      }
      const int rank = static_cast<int>(g_.tensor(t).shape.size());
      TensorSharding wanted = any_cut && i < space.input_dims.size() ? input_sharding(space, cut, static_cast<int>(i))
                                                                     : TensorSharding::replicated(rank);
      // Gemm's C and Conv's bias are added on every rank: under a cut reduction they are
      // held as a partial sum (cut_rewrite_problem lets only weight data through).
      if (i == 0 && !whole.empty()) wanted = without_loops(space.input_dims[0], wanted, whole);
      if (i == 2 && (n.op_type == "Gemm" || n.op_type == "Conv") && any_cut && n.domain.empty())
        wanted.partial_axes = output_sharding(space, cut, 0).partial_axes;
      const int home = home_value(t, wanted, stage);
      if (p_.values[home].stage > stage)
        throw std::runtime_error("rewrite: node '" + n.name + "' in stage " + std::to_string(stage) + " reads '" +
                                 g_.tensor(t).name + "' from the later stage " + std::to_string(p_.values[home].stage));
      step.inputs.push_back(reshard(home, wanted, stage));
    }
    for (int& o : outputs)
      if (o <= -2) {
        const int index = -2 - o;
        o = add_value(std::move(pending_.at(index)));
        home_[n.outputs[index]] = o;
      }
    if (split_axis >= 0 && n.attr_ints("split")) step.local_split = local_parts;
    if (any_cut) set_local_counts(n, step);
    rewritten_attributes(n, model_.graph().node(id), step);
    pending_.clear();
    step.outputs = outputs;
    if (n.op_type == "Reshape" || n.op_type == "Flatten") check_element_counts(n, step);
    p_.steps.push_back(std::move(step));
    if (sliced_output_) {
      const int kept = reshard(outputs[0], *sliced_output_, stage);
      p_.values[kept].name = g_.tensor(n.outputs[0]).name;
      home_[n.outputs[0]] = kept;
      sliced_output_.reset();
    }
  }

  // The sharding a Reshape's, Concat's or Slice's local result has: the output's, less the
  // axes of loops no input has. Such a loop is an output dim that is the minor factor of a
  // merged input dim (batch in (seq*batch, h) -> (seq, batch, h)), a Concat's axis or a
  // Slice's sliced axis; the cut keeps the inputs whole along it, so each rank computes it
  // whole and then keeps its share with a local slice.
  // Loops in `whole` (unevenly_merged_loops) are computed whole too.
  static TensorSharding computed_sharding(const IterationSpace& space, TensorSharding out,
                                          const std::vector<int>& whole) {
    for (int d = 0; d < out.rank(); ++d) {
      const int loop = space.output_dims.at(0).at(d);
      const bool read = std::any_of(space.input_dims.begin(), space.input_dims.end(), [&](const std::vector<int>& in) {
        return std::find(in.begin(), in.end(), loop) != in.end();
      });
      if (!read || std::find(whole.begin(), whole.end(), loop) != whole.end()) out.dim_axes[d].clear();
    }
    return out;
  }

  // A Reshape (Flatten) cut on a merged output dim splits its input on the merged dim's
  // major factor, which may not divide where the product does: (seq, batch*heads, d) ->
  // (seq*batch, h) cut 2 ways on seq*batch = 17*12 reads seq = 17 split 2 ways. Such a loop
  // is computed whole along that input dim, and each rank then keeps its even share of the
  // output with a local slice (computed_sharding), as for a loop no input has. The loops of
  // input 0's unevenly split dims whose output dim divides evenly.
  std::vector<int> unevenly_merged_loops(const Node& n, const IterationSpace& space, const NodeCut& cut) {
    std::vector<int> loops;
    if ((n.op_type != "Reshape" && n.op_type != "Flatten") || !n.domain.empty() || n.inputs.empty() ||
        space.input_dims.empty() || space.output_dims.empty())
      return loops;
    const TensorSharding in = input_sharding(space, cut, 0);
    const TensorSharding out = output_sharding(space, cut, 0);
    const std::vector<std::int64_t> in_shape = global_shape(n.inputs[0]);
    const std::vector<std::int64_t> out_shape = global_shape(n.outputs[0]);
    for (int d = 0; d < in.rank() && d < static_cast<int>(in_shape.size()); ++d) {
      const int loop = space.input_dims[0].at(d);
      const auto o = std::find(space.output_dims[0].begin(), space.output_dims[0].end(), loop);
      if (in.dim_axes[d].empty() || o == space.output_dims[0].end()) continue;
      const auto od = static_cast<std::size_t>(o - space.output_dims[0].begin());
      const std::int64_t ways = p_.mesh.group_shape(in.dim_axes[d]).size();
      if (in_shape[d] % ways != 0 && out_shape.at(od) % p_.mesh.group_shape(out.dim_axes.at(od)).size() == 0)
        loops.push_back(loop);
    }
    return loops;
  }

  // `s` (an operand over `dims`) less the axes of the loops in `loops`.
  static TensorSharding without_loops(const std::vector<int>& dims, TensorSharding s, const std::vector<int>& loops) {
    for (int d = 0; d < s.rank() && d < static_cast<int>(dims.size()); ++d)
      if (std::find(loops.begin(), loops.end(), dims[d]) != loops.end()) s.dim_axes[d].clear();
    return s;
  }

  int local_shape_constant(const Node& n, ShardedValue out) {
    // The local shape of the first output, computed the way add_value will.
    const int tmp = add_value(std::move(out));
    const std::vector<std::int64_t> local = p_.values[tmp].local_shape;
    p_.values.pop_back();
    return local_constant(n.name + "__local_shape", local);
  }

  // A replicated int64 vector in place of a global one (a shape, Split sizes).
  int local_constant(const std::string& name, const std::vector<std::int64_t>& values) {
    ShardedValue c;
    c.name = name;
    c.origin = ValueOrigin::local_constant;
    c.global_shape = {static_cast<std::int64_t>(values.size())};
    c.sharding = TensorSharding::replicated(1);
    c.elem_type = onnx::TensorProto::INT64;
    c.stage = -1;
    p_.owned_data.push_back(int64_tensor(name, values));
    c.data = &p_.owned_data.back();
    return add_value(std::move(c));
  }

  // A grouped (depthwise) Conv cut on its channels keeps its groups per rank; packed
  // attention cut on its heads keeps its heads per rank: the attribute divides as the
  // operand's dim does.
  void set_local_counts(const Node& n, ProgramStep& step) {
    auto local = [&](const char* attribute, std::size_t input, std::size_t dim) {
      const std::int64_t count = n.attr_int(attribute, 0);
      if (count <= 1 || input >= step.inputs.size() || step.inputs[input] < 0) return;
      const ShardedValue& x = p_.values.at(step.inputs[input]);
      const std::int64_t ways = x.global_shape.at(dim) / x.local_shape.at(dim);
      if (ways <= 1) return;
      if (count % ways != 0)
        throw std::runtime_error("rewrite: node '" + n.name + "' (" + n.op_type + "): its " + attribute + " " +
                                 std::to_string(count) + " does not split " + std::to_string(ways) + " ways");
      step.local_attributes.emplace_back(attribute, count / ways);
    };
    if (n.op_type == "Conv" && n.domain.empty()) local("group", 0, 1);
    if (n.domain == "com.microsoft" && (n.op_type == "MultiHeadAttention" || n.op_type == "GroupQueryAttention")) {
      local("num_heads", 0, 2);
      local("kv_num_heads", 1, 2);
    }
  }

  // Integer attributes the import changed (merged_heads.h renumbers a Transpose's perm and a
  // Softmax's axis): the IR's value is the one the program runs.
  static void rewritten_attributes(const Node& n, const onnx::NodeProto& proto, ProgramStep& step) {
    for (const auto& a : proto.attribute()) {
      if (a.type() == onnx::AttributeProto::INTS) {
        const auto ir = n.attr_ints(a.name());
        if (ir && !std::equal(ir->begin(), ir->end(), a.ints().begin(), a.ints().end()))
          step.rewritten_ints.emplace_back(a.name(), *ir);
      } else if (a.type() == onnx::AttributeProto::INT) {
        const bool local = std::any_of(step.local_attributes.begin(), step.local_attributes.end(),
                                       [&](const auto& l) { return l.first == a.name(); });
        if (const std::int64_t ir = n.attr_int(a.name(), a.i()); !local && ir != a.i())
          step.local_attributes.emplace_back(a.name(), ir);
      }
    }
  }

  void check_element_counts(const Node& n, const ProgramStep& step) {
    auto count = [&](int v) {
      std::int64_t e = 1;
      for (auto d : p_.values[v].local_shape) e *= d;
      return e;
    };
    if (count(step.inputs[0]) != count(step.outputs[0]))
      throw std::runtime_error("rewrite: node '" + n.name + "' (" + n.op_type +
                               "): its cut splits input and output differently (local element counts differ)");
  }

  const onnx::ModelProto& model_;
  Graph& g_;
  const Plan& plan_;
  const KeptOutputs& kept_;
  ShardedProgram p_;
  AxisSizes sizes_;
  std::vector<int> home_;
  std::vector<bool> folded_, live_;
  std::vector<ShardedValue> pending_;
  std::vector<DimBlocks> blocks_;  // per tensor (split_blocks.h)
  std::optional<TensorSharding> sliced_output_;  // an output still to slice (computed_sharding)
  std::map<std::string, int> resharded_;
  int counter_ = 0;
};

}  // namespace

Mutation parse_mutation(const std::string& text) {
  if (text == "none" || text.empty()) return Mutation::none;
  if (text == "drop-all-reduce") return Mutation::drop_all_reduce;
  if (text == "wrong-weight-slice") return Mutation::wrong_weight_slice;
  throw std::runtime_error("unknown mutation '" + text + "' (known: none, drop-all-reduce, wrong-weight-slice)");
}

onnx::NodeProto step_node(const onnx::ModelProto& original, const ProgramStep& step) {
  onnx::NodeProto n = original.graph().node(static_cast<int>(step.node));
  n.clear_input();
  n.clear_output();
  for (const auto& [name, value] : step.local_attributes)
    for (auto& a : *n.mutable_attribute())
      if (a.name() == name) a.set_i(value);
  for (const auto& [name, values] : step.rewritten_ints)
    for (auto& a : *n.mutable_attribute())
      if (a.name() == name) {
        a.clear_ints();
        for (auto v : values) a.add_ints(v);
      }
  if (!step.local_split.empty())
    for (auto& a : *n.mutable_attribute())
      if (a.name() == "split") {
        a.clear_ints();
        for (auto size : step.local_split) a.add_ints(size);
      }
  return n;
}

int ShardedProgram::stage_of_rank(int rank) const {
  if (pipeline_axis < 0) return 0;
  const auto& a = mesh.axes().at(pipeline_axis);
  return (rank / a.stride) % a.size;
}

int ShardedProgram::local_index(int rank) const {
  if (pipeline_axis < 0) return rank;
  const auto& a = mesh.axes().at(pipeline_axis);
  const int coord = (rank / a.stride) % a.size;
  const int without = rank - coord * a.stride;  // rank with pipeline coordinate 0
  // Remove the pipeline axis from the mixed radix: higher part divided by the axis size.
  const int high = without / (a.stride * a.size), low = without % a.stride;
  return high * a.stride + low;
}

std::vector<int> ShardedProgram::ranks_of_stage(int stage) const {
  std::vector<int> ranks;
  for (int r = 0; r < mesh.num_devices(); ++r)
    if (stage_of_rank(r) == stage) ranks.push_back(r);
  return ranks;
}

std::vector<int> ShardedProgram::spmd_axes() const {
  std::vector<int> axes;
  for (int a = 0; a < static_cast<int>(mesh.axes().size()); ++a)
    if (a != pipeline_axis) axes.push_back(a);
  return axes;
}

ShardedProgram build_sharded_program(const onnx::ModelProto& original, Graph& graph, const Plan& plan,
                                     const hardware::Cluster& cluster, Mutation mutation, const KeptOutputs& kept) {
  // The rewrite splits every dim evenly: a padded loop (Megatron's padded vocabulary) would
  // need the padded rows written into the program, which it does not do.
  for (NodeId n = 0; n < static_cast<NodeId>(plan.node_cuts.size()) && n < static_cast<NodeId>(graph.nodes().size()); ++n)
    if (const auto& padded = plan.node_cuts[n].padded_extents; !padded.empty()) {
      const IterationSpace space = iteration_space_of(graph, n);
      const auto [loop, extent] = *padded.begin();
      const std::string name = loop < static_cast<int>(space.loops.size()) ? space.loops[loop].name : std::to_string(loop);
      throw std::runtime_error("rewrite: node '" + graph.node(n).name + "' pads loop '" + name + "' to " + std::to_string(extent) +
                               " (Megatron's padded vocabulary); the ONNX rewrite splits dims evenly and writes no padded "
                               "plan: compile without --onnx, or for a tensor-parallel size that divides the vocabulary");
    }
  // A fused graph is written as the model's own nodes, each cut as its fused node is.
  if (graph.unfused) return Builder(original, *graph.unfused, unfuse_plan(graph, plan), cluster, mutation, kept).run();
  return Builder(original, graph, plan, cluster, mutation, kept).run();
}

}  // namespace symtensor::compiler
