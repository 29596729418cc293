// Heads merged with the batch, as PyTorch's nn.MultiheadAttention writes them (#31): q, k, v
// reshaped [seq, batch, heads*d] -> [seq, batch*heads, d] (heads inner) and attended batched
// over batch*heads. The importer gives the heads a dim of their own (merged_heads.h), so the
// fused attention is [batch, heads, seq, d] and Megatron cuts its heads; the sharded program
// keeps each rank's heads. Layouts the split would change (heads outer, a Softmax over the
// merged dim) are left as they are.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/analysis/transformer_structure.h"
#include "compiler/onnx_import/import.h"
#include "compiler/rewrite/sharded_program.h"
#include "compiler/strategies/megatron.h"
#include "compiler/strategies/propagation.h"
#include "tests/compiler/onnx_test_util.h"
#include "tests/compiler/strategies_test_util.h"

namespace symtensor::compiler {
namespace {

enum class MhLayout { pytorch, heads_outer, softmax_over_merged, softmax_before_merged };

// One post-norm encoder attention block over x [8, batch, 32], 4 heads of 8, as
// torch.onnx.export writes nn.MultiheadAttention (targets as constants; PyTorch computes
// them from Shape, which the importer folds to the same values).
onnx::ModelProto mh_encoder_block(MhLayout layout) {
  using namespace symtensor::testing;
  onnx::ModelProto m = make_model();
  add_input(m, "x", {std::int64_t{8}, std::string("batch"), std::int64_t{32}});
  add_initializer(m, float_tensor("ln_scale", {32}));
  add_initializer(m, float_tensor("ln_bias", {32}));
  add_initializer(m, float_tensor("w_in", {32, 96}));
  add_initializer(m, float_tensor("w_out", {32, 32}));
  add_initializer(m, int64_tensor("axis2", {2}));
  add_initializer(m, int64_tensor("heads_split", {8, -1, 8}));         // [8, batch*4, 8]
  add_initializer(m, int64_tensor("heads_apart", {8, -1, 4, 8}));      // [8, batch, 4, 8]
  add_initializer(m, int64_tensor("tokens", {-1, 32}));
  add_initializer(m, int64_tensor("unflatten", {8, -1, 32}));
  add_node(m, "LayerNormalization", {"x", "ln_scale", "ln_bias"}, {"normed"}, "norm");
  add_node(m, "MatMul", {"normed", "w_in"}, {"qkv"}, "in_proj");
  const char* parts[] = {"q", "k", "v"};
  for (int p = 0; p < 3; ++p) {
    const std::string name = parts[p];
    add_initializer(m, int64_tensor(name + "_start", {32 * p}));
    add_initializer(m, int64_tensor(name + "_end", {32 * (p + 1)}));
    add_node(m, "Slice", {"qkv", name + "_start", name + "_end", "axis2"}, {name}, name + "_slice");
    if (layout == MhLayout::heads_outer) {
      // [8, batch, 4, 8] -> [8, 4, batch, 8] -> [8, 4*batch, 8]: the merged index h*batch + b.
      add_node(m, "Reshape", {name, "heads_apart"}, {name + "_apart"}, name + "_apart");
      add_ints_attr(add_node(m, "Transpose", {name + "_apart"}, {name + "_outer"}, name + "_outer"), "perm", {0, 2, 1, 3});
      add_node(m, "Reshape", {name + "_outer", "heads_split"}, {name + "_heads"}, name + "_heads");
    } else {
      add_node(m, "Reshape", {name, "heads_split"}, {name + "_heads"}, name + "_heads");
    }
    std::string heads = name + "_heads";
    if (layout == MhLayout::softmax_before_merged && p == 0) {
      // A Softmax over q's sequence dim, counted from the end (-3 of [8, batch*4, 8]): after
      // the split -3 would name the batch.
      add_int_attr(add_node(m, "Softmax", {heads}, {"q_seq_softmax"}, "q_seq_softmax"), "axis", -3);
      heads = "q_seq_softmax";
    }
    add_ints_attr(add_node(m, "Transpose", {heads}, {name + "_t"}, name + "_t"), "perm",
                  p == 1 ? std::vector<std::int64_t>{1, 2, 0} : std::vector<std::int64_t>{1, 0, 2});
  }
  add_initializer(m, float_tensor("scale", {}));
  add_node(m, "Mul", {"q_t", "scale"}, {"q_scaled"}, "scale_q");
  add_node(m, "MatMul", {"q_scaled", "k_t"}, {"scores"}, "qk");
  add_int_attr(add_node(m, "Softmax", {"scores"}, {"probs"}, "softmax"), "axis",
               layout == MhLayout::softmax_over_merged ? 0 : -1);
  add_node(m, "MatMul", {"probs", "v_t"}, {"context"}, "pv");
  add_ints_attr(add_node(m, "Transpose", {"context"}, {"context_t"}, "context_t"), "perm", {1, 0, 2});
  add_node(m, "Reshape", {"context_t", "tokens"}, {"context_tokens"}, "merge_tokens");
  add_node(m, "MatMul", {"context_tokens", "w_out"}, {"projected"}, "out_proj");
  add_node(m, "Reshape", {"projected", "unflatten"}, {"attended"}, "unflatten");
  add_node(m, "Add", {"x", "attended"}, {"y"}, "residual");
  add_output(m, "y", {std::int64_t{8}, std::string("batch"), std::int64_t{32}});
  return m;
}

Graph mh_import(const onnx::ModelProto& model) {
  ImportOptions o;
  o.bindings = {{"batch", 12}};
  o.warn_opaque = false;
  return import_onnx_model(model, "mh_encoder_block", o);
}

// A tensor's bound shape.
std::vector<long> mh_shape(const Graph& g, const std::string& name) {
  const TensorId t = g.find_tensor(name);
  if (t == kNone) throw std::runtime_error("no tensor '" + name + "'");
  std::vector<long> out;
  for (const auto& e : g.tensor(t).shape) out.push_back(GiNaC::ex_to<GiNaC::numeric>(g.symbols.substitute(e)).to_long());
  return out;
}

NodeId mh_node(const Graph& g, const std::string& op) {
  for (NodeId n = 0; n < static_cast<NodeId>(g.nodes().size()); ++n)
    if (g.node(n).op_type == op || g.node(n).name == op) return n;
  throw std::runtime_error("no node '" + op + "'");
}

TEST(ImportMergedHeads, PyTorchsBatchTimesHeadsBecomesAHeadsDimMegatronCuts) {
  const onnx::ModelProto model = mh_encoder_block(MhLayout::pytorch);
  Graph g = mh_import(model);
  // [8, batch*4, 8] is [8, batch, 4, 8], heads inner; the attention runs on [batch, 4, 8, 8].
  EXPECT_EQ(mh_shape(g, "q_heads"), (std::vector<long>{8, 12, 4, 8}));
  EXPECT_EQ(mh_shape(g, "k_t"), (std::vector<long>{12, 4, 8, 8}));  // Kᵀ: [batch, heads, d, seq]
  EXPECT_EQ(mh_shape(g, "context_t"), (std::vector<long>{8, 12, 4, 8}));
  EXPECT_EQ(mh_shape(g, "context_tokens"), (std::vector<long>{96, 32}));  // the leaving Reshape as before
  EXPECT_EQ(g.node(mh_node(g, "k_t")).attr_ints("perm"), (std::vector<std::int64_t>{1, 2, 3, 0}));
  EXPECT_EQ(g.node(mh_node(g, "context_t")).attr_ints("perm"), (std::vector<std::int64_t>{2, 0, 1, 3}));

  const NodeId attention = mh_node(g, "FusedAttention");
  const IterationSpace space = iteration_space_of(g, attention);
  const int heads = attention_heads_loop(space, loop_with_symbol(g, space, "batch"));
  ASSERT_GE(heads, 0);
  EXPECT_EQ(numeric_extent(g, space.loops[heads].extent), 4.0);

  // Megatron tp=2 cuts that loop, and each rank's program holds 2 of the 4 heads.
  const hardware::Cluster cluster = testing::dgx(1, 2);
  MegatronKnobs k;
  k.tp = 2;
  const Plan plan = make_megatron_plan(g, cluster, k, StrategyOptions{});
  EXPECT_FALSE(plan.node_cuts.at(attention).loop_axes.at(heads).empty());
  const ShardedProgram p = build_sharded_program(model, g, plan, cluster);
  bool seen_q = false, seen_perm = false;
  for (const ShardedValue& v : p.values)
    if (v.name == "q_heads") {
      seen_q = true;
      EXPECT_EQ(v.local_shape, (std::vector<std::int64_t>{8, 12, 2, 8}));
    }
  // The model's Transpose node is written with the perm the split gave it.
  const NodeId k_t = g.unfused->find_tensor("k_t") == kNone ? kNone : g.unfused->tensor(g.unfused->find_tensor("k_t")).producer;
  for (const ProgramStep& s : p.steps)
    if (s.kind == ProgramStep::Kind::node && s.node == k_t) {
      const onnx::NodeProto n = step_node(model, s);
      ASSERT_EQ(n.attribute_size(), 1);
      EXPECT_EQ(std::vector<std::int64_t>(n.attribute(0).ints().begin(), n.attribute(0).ints().end()),
                (std::vector<std::int64_t>{1, 2, 3, 0}));
      seen_perm = true;
    }
  EXPECT_TRUE(seen_q);
  EXPECT_TRUE(seen_perm);
}

// The import says what it did, in one note on stderr (not when notes are off): how many
// attention layers, and the first split.
TEST(ImportMergedHeads, TheImportNotesTheSplit) {
  ImportOptions o;
  o.bindings = {{"batch", 12}};
  ::testing::internal::CaptureStderr();
  import_onnx_model(mh_encoder_block(MhLayout::pytorch), "mh_encoder_block", o);
  const std::string note = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(note.find("symtensor: note: mh_encoder_block: heads merged with the batch"), std::string::npos) << note;
  EXPECT_NE(note.find("in 1 attention layer, so tensor parallelism can cut them: [8, 4*batch, 8] -> [8, batch, 4, 8] at 'q_heads'"),
            std::string::npos)
      << note;
  ::testing::internal::CaptureStderr();
  mh_import(mh_encoder_block(MhLayout::pytorch));  // notes off
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST(ImportMergedHeads, HeadsOuterIsLeftAsItIs) {
  Graph g = mh_import(mh_encoder_block(MhLayout::heads_outer));
  // The merged index is h*batch + b: no Reshape splits [8, batch, 32] into [8, batch*4, 8].
  EXPECT_EQ(mh_shape(g, "q_heads"), (std::vector<long>{8, 48, 8}));
  EXPECT_EQ(mh_shape(g, "k_t"), (std::vector<long>{48, 8, 8}));
  MegatronKnobs k;
  k.tp = 2;
  try {
    make_megatron_plan(g, testing::dgx(1, 2), k, StrategyOptions{});
    ADD_FAILURE() << "tp=2 of merged heads was planned";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("has no heads loop to cut (its heads are merged with the batch"), std::string::npos)
        << e.what();
  }
}

TEST(ImportMergedHeads, ASoftmaxOverTheMergedDimKeepsItMerged) {
  Graph g = mh_import(mh_encoder_block(MhLayout::softmax_over_merged));
  // Normalizing over batch*heads needs the dim whole: the Reshapes are not split.
  EXPECT_EQ(mh_shape(g, "q_heads"), (std::vector<long>{8, 48, 8}));
  EXPECT_EQ(mh_shape(g, "scores"), (std::vector<long>{48, 8, 8}));
  EXPECT_EQ(g.node(mh_node(g, "softmax")).attr_int("axis", -1), 0);
}

TEST(ImportMergedHeads, ANegativeSoftmaxAxisBeforeTheMergedDimKeepsItsDim) {
  Graph g = mh_import(mh_encoder_block(MhLayout::softmax_before_merged));
  EXPECT_EQ(mh_shape(g, "q_heads"), (std::vector<long>{8, 12, 4, 8}));  // split
  EXPECT_EQ(g.node(mh_node(g, "q_seq_softmax")).attr_int("axis", -1), 0);  // still the sequence
}

}  // namespace
}  // namespace symtensor::compiler
