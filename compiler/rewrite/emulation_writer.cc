#include "compiler/rewrite/emulation_writer.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "compiler/rewrite/onnx_emit.h"
#include "compiler/rewrite/tensor_data.h"

namespace symtensor::compiler {
namespace {

// Declared type of an original input/output with dim_params replaced by their bindings.
onnx::ValueInfoProto bound_value_info(const onnx::ValueInfoProto& vi, const std::map<std::string, double>& bindings) {
  onnx::ValueInfoProto out = vi;
  auto* shape = out.mutable_type()->mutable_tensor_type()->mutable_shape();
  for (auto& dim : *shape->mutable_dim()) {
    if (!dim.has_dim_param()) continue;
    auto it = bindings.find(dim.dim_param());
    if (it == bindings.end())
      throw std::runtime_error("emulation: dim '" + dim.dim_param() + "' of '" + vi.name() + "' is not bound");
    dim.set_dim_value(static_cast<std::int64_t>(it->second));
  }
  return out;
}

onnx::NodeProto concat_node(const std::string& name, std::int64_t axis) {
  onnx::NodeProto n;
  n.set_op_type("Concat");
  n.set_name(name);
  auto* a = n.add_attribute();
  a->set_name("axis");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(axis);
  return n;
}

class EmulationWriter {
 public:
  EmulationWriter(const onnx::ModelProto& original, const ShardedProgram& p)
      : original_(original), p_(p), m_(model_skeleton(original, original.graph().name() + "_emulation")),
        g_(*m_.mutable_graph()), consts_(g_, "emu_const_"), names_(p.values.size()) {}

  onnx::ModelProto run() {
    std::set<std::string> initializer_names;
    for (const auto& init : original_.graph().initializer()) initializer_names.insert(init.name());
    for (const auto& in : original_.graph().input())
      if (!initializer_names.count(in.name())) *g_.add_input() = bound_value_info(in, p_.bindings);
    for (const auto& out : original_.graph().output()) *g_.add_output() = bound_value_info(out, p_.bindings);
    bool dropped = false;
    for (const ProgramStep& step : p_.steps) {
      const std::vector<int> ranks = p_.ranks_of_stage(step.stage);
      if (step.kind == ProgramStep::Kind::node) {
        for (int r : ranks) emit_node(step, r);
      } else if (p_.mutation == Mutation::drop_all_reduce && !dropped &&
                 step.redistribution.kind == RedistributionKind::all_reduce) {
        dropped = true;  // test-only: each rank keeps its partial sum
        for (int r : ranks) names_[step.outputs[0]][p_.local_index(r)] = name(step.inputs[0], r);
      } else {
        for (int r : ranks) emit_collective(step, r);
      }
    }
    for (const auto& [out, v] : p_.outputs) {
      const int stage = std::max(p_.values[v].stage, 0);
      const std::string input = p_.values[v].sharding.fully_replicated() ? name(v, p_.ranks_of_stage(stage).at(0))
                                                                         : assemble(v, p_.ranks_of_stage(stage), 0);
      onnx::NodeProto* n = g_.add_node();
      n->set_op_type("Identity");
      n->set_name("output@" + out);
      n->add_input(input);
      n->add_output(out);
    }
    auto* meta = m_.add_metadata_props();
    meta->set_key("symtensor.bindings");
    std::string b;
    for (const auto& [k, x] : p_.bindings) b += (b.empty() ? "" : ",") + k + "=" + std::to_string(static_cast<long>(x));
    meta->set_value(b);
    return std::move(m_);
  }

 private:
  // The name of value v on rank r, emitting the source data or slice on first use.
  std::string name(int v, int r) {
    if (v < 0) return "";
    const int li = p_.local_index(r);
    auto& slot = names_[v];
    if (auto it = slot.find(li); it != slot.end()) return it->second;
    const ShardedValue& val = p_.values[v];
    std::string result;
    switch (val.origin) {
      case ValueOrigin::folded_constant:
      case ValueOrigin::local_constant:
        result = "emu_data_" + val.name;
        if (emitted_.insert(result).second) *g_.add_initializer() = to_tensor_proto(read_tensor_bytes(*val.data), result);
        break;
      case ValueOrigin::initializer:
        result = val.name + "@" + boxes_key(data_boxes(p_, v, r)) + (holds_data(val, p_.mesh, r) ? "" : "_zeros");
        if (emitted_.insert(result).second) *g_.add_initializer() = shard_data(p_, v, r, result);
        break;
      case ValueOrigin::graph_input: {
        if (val.sharding.fully_replicated()) {
          result = val.name;
          break;
        }
        const std::vector<Piece> boxes = boxes_of(val, p_.mesh, r);
        result = val.name + "@" + boxes_key(boxes);
        if (emitted_.insert(result).second) emit_boxes(val, boxes, result);
        break;
      }
      default:
        throw std::runtime_error("emulation: value '" + val.name + "' used on rank " + std::to_string(r) +
                                 " before it is produced");
    }
    slot[li] = result;
    return result;
  }

  // A sharded output (KeptOutputs) whole again, for the comparison with the original: the
  // ranks' pieces concatenated dim by dim from `dim` on, in global order (emulation only; the
  // stage files return each rank's piece).
  std::string assemble(int v, const std::vector<int>& ranks, int dim) {
    const ShardedValue& val = p_.values[v];
    if (val.blocked_dim >= 0)
      throw std::runtime_error("emulation: output '" + val.name + "' is held in blocks; it cannot be kept sharded");
    if (dim == static_cast<int>(val.global_shape.size())) return name(v, ranks.front());
    std::map<std::int64_t, std::vector<int>> by_offset;
    for (int r : ranks) by_offset[piece_of(val.sharding, val.global_shape, p_.mesh, r).offset[dim]].push_back(r);
    if (by_offset.size() == 1) return assemble(v, ranks, dim + 1);
    std::string output = val.name + "@whole" + std::to_string(dim);
    for (const auto& [offset, group] : by_offset) output += "_" + std::to_string(p_.local_index(group.front()));
    if (!emitted_.insert(output).second) return output;
    onnx::NodeProto concat = concat_node("concat@" + output, dim);
    for (const auto& [offset, group] : by_offset) concat.add_input(assemble(v, group, dim + 1));
    concat.add_output(output);
    *g_.add_node() = std::move(concat);
    return output;
  }

  void set_name(int v, int r, const std::string& n) { names_[v][p_.local_index(r)] = n; }
  std::string fresh(int v, int r) { return p_.values[v].name + "@" + std::to_string(p_.local_index(r)); }

  // A graph input's boxes for one rank, sliced from the whole input (and joined for blocks).
  void emit_boxes(const ShardedValue& val, const std::vector<Piece>& boxes, const std::string& output) {
    const Piece whole{std::vector<std::int64_t>(val.global_shape.size(), 0), val.global_shape};
    if (boxes.size() == 1) return emit_slice(val.name, boxes.front(), whole, output);
    onnx::NodeProto concat = concat_node("concat@" + output, val.blocked_dim);
    for (std::size_t b = 0; b < boxes.size(); ++b) {
      const std::string part = output + "_block" + std::to_string(b);
      emit_slice(val.name, boxes[b], whole, part);
      concat.add_input(part);
    }
    concat.add_output(output);
    *g_.add_node() = std::move(concat);
  }

  // Slice `input` (holding box `have`) down to box `want`.
  void emit_slice(const std::string& input, const Piece& want, const Piece& have, const std::string& output) {
    std::vector<std::int64_t> starts, ends, axes;
    for (std::size_t d = 0; d < want.offset.size(); ++d) {
      if (want.offset[d] == have.offset[d] && want.extent[d] == have.extent[d]) continue;
      starts.push_back(want.offset[d] - have.offset[d]);
      ends.push_back(starts.back() + want.extent[d]);
      axes.push_back(static_cast<std::int64_t>(d));
    }
    onnx::NodeProto* n = g_.add_node();
    n->set_name("slice@" + output);
    if (axes.empty()) {
      n->set_op_type("Identity");
      n->add_input(input);
    } else {
      n->set_op_type("Slice");
      n->add_input(input);
      n->add_input(consts_.get(starts));
      n->add_input(consts_.get(ends));
      n->add_input(consts_.get(axes));
    }
    n->add_output(output);
  }

  void emit_node(const ProgramStep& step, int r) {
    onnx::NodeProto n = step_node(original_, step);
    for (int v : step.inputs) n.add_input(name(v, r));
    for (int v : step.outputs) {
      if (v < 0) {
        n.add_output("");
        continue;
      }
      const std::string out = fresh(v, r);
      set_name(v, r, out);
      n.add_output(out);
    }
    n.set_name((n.name().empty() ? n.op_type() + std::to_string(step.node) : n.name()) + "@" + std::to_string(p_.local_index(r)));
    *g_.add_node() = std::move(n);
  }

  void emit_collective(const ProgramStep& step, int r) {
    const RedistributionStep& rs = step.redistribution;
    const int in = step.inputs[0], out = step.outputs[0];
    const ShardedValue& from = p_.values[in];
    const ShardedValue& to = p_.values[out];
    const Piece want = piece_of(to.sharding, to.global_shape, p_.mesh, r);
    const Piece have = piece_of(from.sharding, from.global_shape, p_.mesh, r);
    std::vector<int> group = p_.mesh.group_of(r, rs.axes);
    const std::string leader = fresh(out, group.front()) + "_group";
    switch (rs.kind) {
      case RedistributionKind::slice: {
        const std::string o = fresh(out, r);
        emit_slice(name(in, r), want, have, o);
        set_name(out, r, o);
        return;
      }
      case RedistributionKind::all_reduce:
      case RedistributionKind::reduce_scatter: {
        if (emitted_.insert(leader).second) {
          onnx::NodeProto* n = g_.add_node();
          n->set_op_type("Sum");
          n->set_name("sum@" + leader);
          for (int m : group) n->add_input(name(in, m));
          n->add_output(leader);
        }
        if (rs.kind == RedistributionKind::all_reduce) {
          set_name(out, r, leader);
        } else {
          const std::string o = fresh(out, r);
          emit_slice(leader, want, have, o);
          set_name(out, r, o);
        }
        return;
      }
      case RedistributionKind::all_gather: {
        if (emitted_.insert(leader).second) {
          std::sort(group.begin(), group.end(), [&](int a, int b) {
            return piece_of(from.sharding, from.global_shape, p_.mesh, a).offset[rs.dim] <
                   piece_of(from.sharding, from.global_shape, p_.mesh, b).offset[rs.dim];
          });
          onnx::NodeProto* n = g_.add_node();
          *n = concat_node("concat@" + leader, rs.dim);
          for (int m : group) n->add_input(name(in, m));
          n->add_output(leader);
        }
        set_name(out, r, leader);
        return;
      }
      case RedistributionKind::all_to_all: {
        std::sort(group.begin(), group.end(), [&](int a, int b) {
          return piece_of(from.sharding, from.global_shape, p_.mesh, a).offset[rs.dim] <
                 piece_of(from.sharding, from.global_shape, p_.mesh, b).offset[rs.dim];
        });
        const std::string o = fresh(out, r);
        onnx::NodeProto concat = concat_node("concat@" + o, rs.dim);
        for (int m : group) {
          const Piece mine = piece_of(from.sharding, from.global_shape, p_.mesh, m);
          Piece part = mine;  // m's box restricted to r's box along to_dim
          part.offset[rs.to_dim] = want.offset[rs.to_dim];
          part.extent[rs.to_dim] = want.extent[rs.to_dim];
          const std::string piece_name = o + "_from" + std::to_string(p_.local_index(m));
          emit_slice(name(in, m), part, mine, piece_name);
          concat.add_input(piece_name);
        }
        concat.add_output(o);
        *g_.add_node() = std::move(concat);
        set_name(out, r, o);
        return;
      }
    }
  }

  const onnx::ModelProto& original_;
  const ShardedProgram& p_;
  onnx::ModelProto m_;
  onnx::GraphProto& g_;
  Int64Constants consts_;
  std::vector<std::map<int, std::string>> names_;
  std::set<std::string> emitted_;
};

}  // namespace

onnx::ModelProto build_emulation_model(const onnx::ModelProto& original, const ShardedProgram& program) {
  return EmulationWriter(original, program).run();
}

}  // namespace symtensor::compiler
