#include "compiler/rewrite/stage_writer.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "compiler/rewrite/multi_device_meta.h"
#include "compiler/rewrite/onnx_emit.h"
#include "compiler/rewrite/tensor_data.h"

namespace symtensor::compiler {
namespace {

void set_attr(onnx::NodeProto& n, const std::string& key, std::int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void set_attr(onnx::NodeProto& n, const std::string& key, const std::vector<std::string>& v) {
  auto* a = n.add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::STRINGS);
  for (const auto& s : v) a->add_strings(s);
}

void add_meta(onnx::ModelProto& m, const std::string& key, const std::string& value) {
  auto* p = m.add_metadata_props();
  p->set_key(key);
  p->set_value(value);
}

std::string shape_text(const std::vector<std::int64_t>& s) {
  std::string t = "[";
  for (std::size_t i = 0; i < s.size(); ++i) t += (i ? "," : "") + std::to_string(s[i]);
  return t + "]";
}

class StageWriter {
 public:
  StageWriter(const onnx::ModelProto& original, const ShardedProgram& p, int stage)
      : original_(original), p_(p), stage_(stage), ranks_(p.ranks_of_stage(stage)) {}

  std::vector<StageFile> run() {
    collect();
    std::vector<int> weight_axes;
    for (int v : used_)
      if (p_.values[v].origin == ValueOrigin::initializer) {
        const TensorSharding& s = p_.values[v].sharding;
        for (const auto& axes : s.dim_axes) weight_axes.insert(weight_axes.end(), axes.begin(), axes.end());
        weight_axes.insert(weight_axes.end(), s.partial_axes.begin(), s.partial_axes.end());  // data or zeros
      }
    std::sort(weight_axes.begin(), weight_axes.end());
    weight_axes.erase(std::unique(weight_axes.begin(), weight_axes.end()), weight_axes.end());
    // Ranks grouped by their coordinate on the weight axes (major axis first).
    std::map<int, std::vector<int>> by_coordinate;
    for (int r : ranks_) {
      int c = 0;
      for (int a : weight_axes) c = c * p_.mesh.axes()[a].size + (r / p_.mesh.axes()[a].stride) % p_.mesh.axes()[a].size;
      by_coordinate[c].push_back(r);
    }
    std::vector<StageFile> files;
    for (const auto& [c, ranks] : by_coordinate) {
      StageFile f;
      f.stage = stage_;
      f.ranks = ranks;
      f.file = weight_axes.empty() ? "stage_" + std::to_string(stage_) + ".onnx"
                                   : "stage_" + std::to_string(stage_) + "_rank_" + std::to_string(c) + ".onnx";
      f.model = build(ranks.front(), weight_axes, c, ranks);
      files.push_back(std::move(f));
    }
    return files;
  }

 private:
  // Values read and written by this stage's steps; boundary values.
  void collect() {
    for (const ProgramStep& s : p_.steps) {
      if (s.stage != stage_) {
        if (s.stage > stage_)
          for (int v : s.inputs)
            if (v >= 0 && p_.values[v].stage == stage_) sends_[v].insert(s.stage);
        continue;
      }
      for (int v : s.inputs)
        if (v >= 0) used_.insert(v);
      for (int v : s.outputs)
        if (v >= 0) produced_.insert(v);
    }
    for (const auto& [name, v] : p_.outputs)
      if (std::max(p_.values[v].stage, 0) == stage_) outputs_.push_back(v);
  }

  onnx::ModelProto build(int rank, const std::vector<int>& weight_axes, int coordinate, const std::vector<int>& ranks) {
    onnx::ModelProto m = model_skeleton(original_, original_.graph().name() + "_stage_" + std::to_string(stage_));
    onnx::GraphProto& g = *m.mutable_graph();
    std::set<std::string> declared;
    for (int v : used_) {
      const ShardedValue& val = p_.values[v];
      if (produced_.count(v)) continue;
      switch (val.origin) {
        case ValueOrigin::initializer: {
          *g.add_initializer() = shard_data(p_, v, rank, val.name);
          break;
        }
        case ValueOrigin::folded_constant:
        case ValueOrigin::local_constant:
          *g.add_initializer() = to_tensor_proto(read_tensor_bytes(*val.data), val.name);
          break;
        case ValueOrigin::graph_input:
          *g.add_input() = tensor_value_info(val.name, val.elem_type, val.local_shape);
          break;
        default:  // produced by an earlier stage: received
          *g.add_input() = tensor_value_info(val.name, val.elem_type, val.local_shape);
          add_meta(m, "symtensor.recv." + val.name, "from stage " + std::to_string(val.stage));
          break;
      }
      declared.insert(val.name);
    }
    for (const ProgramStep& s : p_.steps) {
      if (s.stage != stage_) continue;
      if (s.kind == ProgramStep::Kind::node) {
        onnx::NodeProto n = step_node(original_, s);
        for (int v : s.inputs) n.add_input(v < 0 ? "" : p_.values[v].name);
        for (int v : s.outputs) n.add_output(v < 0 ? "" : p_.values[v].name);
        *g.add_node() = std::move(n);
      } else {
        *g.add_node() = collective_node(s, m);
      }
      for (int v : s.outputs)
        if (v >= 0) *g.add_value_info() = tensor_value_info(p_.values[v].name, p_.values[v].elem_type, p_.values[v].local_shape);
    }
    for (int v : outputs_) add_output(g, v, declared);
    for (const auto& [v, to] : sends_) {
      add_output(g, v, declared);
      std::string t;
      for (int s : to) t += (t.empty() ? "" : ",") + std::to_string(s);
      add_meta(m, "symtensor.send." + p_.values[v].name, "to stages " + t);
    }
    // Graph outputs and boundary values must not also be value_info.
    std::set<std::string> outs;
    for (const auto& o : g.output()) outs.insert(o.name());
    auto* vis = g.mutable_value_info();
    vis->erase(std::remove_if(vis->begin(), vis->end(), [&](const auto& vi) { return outs.count(vi.name()) != 0; }), vis->end());

    add_meta(m, "symtensor.stage", std::to_string(stage_));
    add_meta(m, "symtensor.stages", std::to_string(p_.stages));
    std::string mesh, axes, rank_list;
    for (const auto& a : p_.mesh.axes()) mesh += (mesh.empty() ? "" : ",") + a.name + "=" + std::to_string(a.size);
    for (int a : weight_axes) axes += (axes.empty() ? "" : ",") + p_.mesh.axes()[a].name;
    for (int r : ranks) rank_list += (rank_list.empty() ? "" : ",") + std::to_string(r);
    add_meta(m, "symtensor.mesh", mesh);
    add_meta(m, "symtensor.pipeline_axis", p_.pipeline_axis < 0 ? "" : p_.mesh.axes()[p_.pipeline_axis].name);
    add_meta(m, "symtensor.rank_axes", axes);
    add_meta(m, "symtensor.rank_coordinate", std::to_string(coordinate));
    add_meta(m, "symtensor.ranks", rank_list);
    std::set<int> all(used_.begin(), used_.end());
    all.insert(produced_.begin(), produced_.end());
    nlohmann::json specs = nlohmann::json::array();
    for (int v : all) {
      const ShardedValue& val = p_.values[v];
      specs.push_back(sharding_spec_json(val.name, val.sharding, val.global_shape, p_.mesh, ranks_));
      std::string text = to_string(val.sharding, p_.mesh) + " global=" + shape_text(val.global_shape);
      if (val.blocked_dim >= 0) text += " blocks=" + std::to_string(val.blocked_dim) + ":" + shape_text(val.blocks);
      add_meta(m, "symtensor.sharding." + val.name, text);
    }
    add_meta(m, "symtensor.onnx_multi_device", multi_device_json(p_.mesh, stage_, std::move(specs)).dump());
    return m;
  }

  void add_output(onnx::GraphProto& g, int v, std::set<std::string>& declared) {
    const ShardedValue& val = p_.values[v];
    if (!declared.insert("out:" + val.name).second) return;
    *g.add_output() = tensor_value_info(val.name, val.elem_type, val.local_shape);
  }

  onnx::NodeProto collective_node(const ProgramStep& s, onnx::ModelProto& m) {
    const RedistributionStep& rs = s.redistribution;
    onnx::NodeProto n;
    n.set_name(p_.values[s.outputs[0]].name);
    n.add_input(p_.values[s.inputs[0]].name);
    n.add_output(p_.values[s.outputs[0]].name);
    std::vector<std::string> axes;
    int group = 1;
    for (int a : rs.axes) {
      axes.push_back(p_.mesh.axes()[a].name);
      group *= p_.mesh.axes()[a].size;
    }
    const bool whole_stage = group == static_cast<int>(ranks_.size());
    std::string mesh_axes;
    for (const auto& a : axes) mesh_axes += (mesh_axes.empty() ? "" : ",") + a;
    auto custom = [&](const std::string& op) {
      n.set_domain(kCollectiveDomain);
      n.set_op_type(op);
      set_attr(n, "mesh_axes", axes);
      set_attr(n, "group_size", group);
      add_opset(m, kCollectiveDomain, 1);
    };
    auto microsoft = [&](const std::string& op) {
      n.set_domain("com.microsoft");
      n.set_op_type(op);
      set_attr(n, "group_size", group);
      n.set_doc_string("mesh_axes=" + mesh_axes);
      add_opset(m, "com.microsoft", 1);
    };
    switch (rs.kind) {
      case RedistributionKind::slice:
        custom("Shard");
        set_attr(n, "axis", rs.dim);
        break;
      case RedistributionKind::all_reduce:
        if (whole_stage) microsoft("AllReduce");
        else custom("AllReduce");
        break;
      case RedistributionKind::all_gather:
        if (whole_stage) microsoft("AllGather");
        else custom("AllGather");
        set_attr(n, "axis", rs.dim);
        break;
      case RedistributionKind::reduce_scatter:
        custom("ReduceScatter");
        set_attr(n, "axis", rs.dim);
        break;
      case RedistributionKind::all_to_all:
        custom("AllToAll");
        set_attr(n, "split_axis", rs.to_dim);
        set_attr(n, "concat_axis", rs.dim);
        break;
    }
    return n;
  }

  const onnx::ModelProto& original_;
  const ShardedProgram& p_;
  int stage_;
  std::vector<int> ranks_;
  std::set<int> used_, produced_;
  std::map<int, std::set<int>> sends_;
  std::vector<int> outputs_;
};

}  // namespace

std::vector<StageFile> build_stage_files(const onnx::ModelProto& original, const ShardedProgram& program) {
  std::vector<StageFile> files;
  for (int s = 0; s < program.stages; ++s) {
    auto f = StageWriter(original, program, s).run();
    files.insert(files.end(), std::make_move_iterator(f.begin()), std::make_move_iterator(f.end()));
  }
  return files;
}

}  // namespace symtensor::compiler
