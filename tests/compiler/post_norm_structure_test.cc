// The transformer structure of a post-norm model (BERT without its embedding norm, PyTorch's
// nn.TransformerEncoderLayer with norm_first=False): the first layer's attention reads the
// embedding, not a norm, and is a layer like the others, its GEMMs column- and row-parallel
// and its attention cut by Megatron's tensor parallelism.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/export/model_architecture.h"
#include "compiler/analysis/transformer_structure.h"
#include "compiler/strategies/megatron.h"
#include "tests/compiler/onnx_test_util.h"
#include "tests/compiler/strategies_test_util.h"

namespace symtensor::compiler {
namespace {

// embedding -> [embedding LN] -> L x (x -> q,k,v -> softmax(q k^T / sqrt d) v -> proj -> x + .
// -> LN1 -> fc1 -> Relu -> fc2 -> + -> LN2) -> vocabulary head. Node names: l<i>_<part>.
onnx::ModelProto post_norm_encoder_model(int layers, bool embedding_norm) {
  using namespace symtensor::testing;
  const std::int64_t h = 32, heads = 4, d = h / heads, vocab = 64;
  auto m = make_model();
  add_input(m, "ids", {"batch", "seq"}, onnx::TensorProto::INT64);
  add_initializer(m, float_tensor("embed", {vocab, h}));
  add_initializer(m, float_tensor("w_head", {h, vocab}));
  add_initializer(m, int64_tensor("split_heads", {0, 0, heads, d}));
  add_initializer(m, int64_tensor("merge_heads", {0, 0, h}));
  add_initializer(m, float_tensor("sqrt_d", {}));
  auto layernorm = [&](const std::string& in, const std::string& name) {
    add_initializer(m, float_tensor(name + "_g", {h}));
    add_initializer(m, float_tensor(name + "_b", {h}));
    add_int_attr(add_node(m, "LayerNormalization", {in, name + "_g", name + "_b"}, {name}, name), "axis", -1);
  };
  add_node(m, "Gather", {"embed", "ids"}, {"emb"}, "embedding");
  std::string x = "emb";
  if (embedding_norm) {
    layernorm("emb", "emb_ln");
    x = "emb_ln";
  }
  for (int l = 0; l < layers; ++l) {
    const std::string p = "l" + std::to_string(l) + "_";
    for (const char* w : {"q", "k", "v", "proj"}) add_initializer(m, float_tensor(p + "w_" + w, {h, h}));
    add_initializer(m, float_tensor(p + "w_fc1", {h, 2 * h}));
    add_initializer(m, float_tensor(p + "w_fc2", {2 * h, h}));
    for (const std::string t : {"q", "k", "v"}) {
      add_node(m, "MatMul", {x, p + "w_" + t}, {p + t}, p + t);
      add_node(m, "Reshape", {p + t, "split_heads"}, {p + t + "_heads"});
      add_ints_attr(add_node(m, "Transpose", {p + t + "_heads"}, {p + t + "_t"}), "perm",
                    t == "k" ? std::vector<std::int64_t>{0, 2, 3, 1} : std::vector<std::int64_t>{0, 2, 1, 3});
    }
    add_node(m, "MatMul", {p + "q_t", p + "k_t"}, {p + "scores"}, p + "scores");
    add_node(m, "Div", {p + "scores", "sqrt_d"}, {p + "scaled"});
    add_int_attr(add_node(m, "Softmax", {p + "scaled"}, {p + "probs"}), "axis", -1);
    add_node(m, "MatMul", {p + "probs", p + "v_t"}, {p + "context"}, p + "context");
    add_ints_attr(add_node(m, "Transpose", {p + "context"}, {p + "context_t"}), "perm", {0, 2, 1, 3});
    add_node(m, "Reshape", {p + "context_t", "merge_heads"}, {p + "merged"});
    add_node(m, "MatMul", {p + "merged", p + "w_proj"}, {p + "proj"}, p + "proj");
    add_node(m, "Add", {x, p + "proj"}, {p + "res1"});
    layernorm(p + "res1", p + "ln1");
    add_node(m, "MatMul", {p + "ln1", p + "w_fc1"}, {p + "fc1"}, p + "fc1");
    add_node(m, "Relu", {p + "fc1"}, {p + "relu"});
    add_node(m, "MatMul", {p + "relu", p + "w_fc2"}, {p + "fc2"}, p + "fc2");
    add_node(m, "Add", {p + "ln1", p + "fc2"}, {p + "res2"});
    layernorm(p + "res2", p + "ln2");
    x = p + "ln2";
  }
  add_node(m, "MatMul", {x, "w_head"}, {"logits"}, "head");
  add_output(m, "logits", {"batch", "seq", vocab});
  return m;
}

Graph post_norm_encoder_graph(int layers, bool embedding_norm, AttentionMode attention = AttentionMode::materialized) {
  ImportOptions o;
  o.fusion.attention = attention;
  o.bindings = {{"batch", 8}, {"seq", 16}};
  o.warn_opaque = false;
  return import_onnx_model(post_norm_encoder_model(layers, embedding_norm), "post_norm", o);
}

NodeId post_norm_node(const Graph& g, const std::string& name) {
  for (NodeId n = 0; n < static_cast<NodeId>(g.nodes().size()); ++n)
    if (g.node(n).name == name) return n;
  ADD_FAILURE() << "no node " << name;
  return kNone;
}

bool post_norm_has(const std::vector<NodeId>& v, NodeId n) { return std::find(v.begin(), v.end(), n) != v.end(); }

class PostNormStructure : public ::testing::TestWithParam<bool> {};

TEST_P(PostNormStructure, EveryLayerIsOneWithItsAttentionAndGemms) {
  constexpr int kLayers = 3;
  const bool embedding_norm = GetParam();
  Graph g = post_norm_encoder_graph(kLayers, embedding_norm);
  const TransformerStructure s = find_transformer_structure(g, node_iteration_spaces(g));
  EXPECT_EQ(s.layers(), kLayers);
  EXPECT_EQ(s.decoder_layers(), kLayers);
  ASSERT_EQ(s.layer_inputs.size(), s.layer_anchors.size());
  // q, k, v and fc1 column; proj and fc2 row; two attention MatMuls, in every layer.
  EXPECT_EQ(s.column.size(), 4u * kLayers);
  EXPECT_EQ(s.row.size(), 2u * kLayers);
  EXPECT_EQ(s.attention.size(), 2u * kLayers);
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = "l" + std::to_string(l) + "_";
    for (const char* c : {"q", "k", "v", "fc1"}) EXPECT_TRUE(post_norm_has(s.column, post_norm_node(g, p + c))) << p + c;
    for (const char* r : {"proj", "fc2"}) EXPECT_TRUE(post_norm_has(s.row, post_norm_node(g, p + r))) << p + r;
    for (const char* a : {"scores", "context"})
      EXPECT_TRUE(post_norm_has(s.attention, post_norm_node(g, p + a))) << p + a;
  }
  EXPECT_EQ(s.vocab_heads, std::vector<NodeId>{post_norm_node(g, "head")});
  // The first layer starts at the embedding's norm, or without one at the first reader of the
  // embedding (one of layer 0's q, k, v); each later one at the norm closing the layer before it.
  const NodeId embedding = post_norm_node(g, "embedding");
  if (embedding_norm) {
    EXPECT_EQ(s.layer_anchors.front(), post_norm_node(g, "emb_ln"));
  } else {
    const std::vector<NodeId> qkv{post_norm_node(g, "l0_q"), post_norm_node(g, "l0_k"), post_norm_node(g, "l0_v")};
    EXPECT_TRUE(post_norm_has(qkv, s.layer_anchors.front())) << g.node(s.layer_anchors.front()).name;
  }
  EXPECT_EQ(s.layer_inputs.front(), g.node(embedding).outputs.at(0));
  for (int l = 1; l < kLayers; ++l)
    EXPECT_EQ(s.layer_anchors[l], post_norm_node(g, "l" + std::to_string(l - 1) + "_ln2")) << l;
  // The residual stream is the hidden width and the norms LayerNorms: the export reads them.
  EXPECT_EQ(s.layer_norm_region(), s.norm_region.at(post_norm_node(g, embedding_norm ? "emb_ln" : "l0_ln2")));
}

INSTANTIATE_TEST_SUITE_P(EmbeddingNorm, PostNormStructure, ::testing::Bool());

// Megatron tp=2 cuts layer 0's q, k, v, proj and attention as it cuts layer 1's, the
// attention materialized (MatMul, Softmax, MatMul) or fused.
TEST(PostNormMegatron, CutsTheFirstLayerLikeTheOthers) {
  for (const AttentionMode mode : {AttentionMode::materialized, AttentionMode::fused}) {
    const bool fused = mode == AttentionMode::fused;
    Graph g = post_norm_encoder_graph(2, false, mode);
    const Plan plan = make_megatron_plan(g, testing::dgx(1, 2), parse_megatron_knobs("tp=2"), StrategyOptions{});
    auto cut_loops = [&](NodeId n) {
      const NodeCut& cut = plan.node_cuts.at(n);
      return std::count_if(cut.loop_axes.begin(), cut.loop_axes.end(), [](const auto& axes) { return !axes.empty(); });
    };
    std::vector<std::string> parts{"q", "k", "v", "proj", "fc1", "fc2"};
    if (!fused) parts.insert(parts.end(), {"scores", "context"});
    for (const std::string& part : parts) {
      const auto first = cut_loops(post_norm_node(g, "l0_" + part)), second = cut_loops(post_norm_node(g, "l1_" + part));
      EXPECT_GT(second, 0) << part << (fused ? " (fused)" : "");
      EXPECT_EQ(first, second) << part << (fused ? " (fused)" : "");
    }
    if (fused) {  // one fused attention a layer, each cut over the heads
      std::vector<NodeId> attention;
      for (NodeId n = 0; n < static_cast<NodeId>(g.nodes().size()); ++n)
        if (g.node(n).op_type == "FusedAttention") attention.push_back(n);
      ASSERT_EQ(attention.size(), 2u);
      for (NodeId n : attention) EXPECT_GT(cut_loops(n), 0) << g.node(n).name;
    }
  }
}

// The export says what Megatron-LM's pre-norm layer cannot build: a post-norm encoder (with or
// without an embedding norm) and the zoo's BERT are read as post-norm; a LLaMA, a Gemma 3
// (whose post-attention norms normalize the branch, not the stream) and LLaVA (whose CLIP
// tower normalizes the embeddings' sum once before its pre-norm layers) are not.
TEST(PostNormMegatron, TheExportNamesPostNormLayersAsAGap) {
  auto gap = [](const ModelArchitecture& m) {
    return std::any_of(m.megatron_gaps.begin(), m.megatron_gaps.end(),
                       [](const std::string& g) { return g.find("post-norm layers") != std::string::npos; });
  };
  for (const bool embedding_norm : {false, true}) {
    Graph g = post_norm_encoder_graph(2, embedding_norm);
    const ModelArchitecture m = read_model_architecture(g, node_iteration_spaces(g));
    EXPECT_TRUE(m.post_norm) << embedding_norm;
    EXPECT_TRUE(gap(m)) << embedding_norm;
  }
  {
    Graph g = testing::zoo_graph("bert-large-tiny", 2, 16);
    EXPECT_TRUE(read_model_architecture(g, node_iteration_spaces(g)).post_norm);
  }
  for (const char* preset : {"llama2-7b-tiny", "gemma3-1b-tiny", "llava-1.5-7b-tiny"}) {
    Graph g = testing::zoo_graph(preset, 2, 16);
    const ModelArchitecture m = read_model_architecture(g, node_iteration_spaces(g));
    EXPECT_FALSE(m.post_norm) << preset;
    EXPECT_FALSE(gap(m)) << preset;
  }
}

}  // namespace
}  // namespace symtensor::compiler
