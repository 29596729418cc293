// ONNX import: symbols, bindings, parameters, external data, shape folding.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "compiler/analysis/model_stats.h"
#include "compiler/onnx_import/import.h"
#include "compiler/onnx_import/parameters.h"
#include "tests/compiler/onnx_test_util.h"
#include "tests/temp_path.h"

namespace symtensor::compiler {
namespace {

using namespace symtensor::testing;

bool same(const GiNaC::ex& a, const GiNaC::ex& b) { return (a - b).expand().is_zero(); }

// x[batch, seq, 64] @ W[64, 32] -> y[batch, seq, 32]; z = Relu(u[batch, <unnamed>])
onnx::ModelProto linear_model() {
  auto m = make_model();
  add_input(m, "x", {std::string("batch"), std::string("seq"), std::int64_t{64}});
  add_input(m, "u", {std::string("batch"), std::string("")});
  add_initializer(m, float_tensor("W", {64, 32}));
  add_node(m, "MatMul", {"x", "W"}, {"y"});
  add_node(m, "Relu", {"u"}, {"z"});
  add_output(m, "y", {std::string("batch"), std::string("seq"), std::int64_t{32}});
  add_output(m, "z", {std::string("batch"), std::string("")});
  return m;
}

TEST(Import, DimParamsBecomeSharedSymbolsAndUnnamedDimsFreshOnes) {
  Graph g = import_onnx_model(linear_model(), "linear");
  const Tensor& x = g.tensor(g.find_tensor("x"));
  const Tensor& u = g.tensor(g.find_tensor("u"));
  const Tensor& y = g.tensor(g.find_tensor("y"));
  ASSERT_EQ(x.shape.size(), 3u);
  EXPECT_TRUE(x.shape[0].is_equal(g.symbols.get("batch")));
  EXPECT_TRUE(u.shape[0].is_equal(x.shape[0]));  // the same symbol, not just the same name
  EXPECT_TRUE(y.shape[1].is_equal(g.symbols.get("seq")));
  ASSERT_TRUE(GiNaC::is_a<GiNaC::symbol>(u.shape[1]));
  EXPECT_EQ(GiNaC::ex_to<GiNaC::symbol>(u.shape[1]).get_name().rfind("unk", 0), 0u);
  EXPECT_EQ(g.inputs.size(), 2u);  // W is a parameter, not an input
  EXPECT_EQ(g.tensor(g.find_tensor("y")).producer, g.tensor(g.find_tensor("W")).consumers.at(0));
}

TEST(Import, BindingsGiveNumbers) {
  ImportOptions o;
  o.bindings = parse_bindings("batch=8,seq=128");
  Graph g = import_onnx_model(linear_model(), "linear", o);
  const Tensor& y = g.tensor(g.find_tensor("y"));
  EXPECT_EQ(g.symbols.evaluate(y.num_elements()).value(), 8.0 * 128 * 32);
  // u still has an unbound unnamed dim
  EXPECT_FALSE(g.symbols.evaluate(g.tensor(g.find_tensor("u")).num_elements()).has_value());
}

TEST(Import, BindingErrors) {
  EXPECT_THROW(parse_bindings("batch=0"), std::runtime_error);
  EXPECT_THROW(parse_bindings("batch=-4"), std::runtime_error);
  EXPECT_THROW(parse_bindings("batch=2.5"), std::runtime_error);
  EXPECT_THROW(parse_bindings("batch=x"), std::runtime_error);
  EXPECT_THROW(parse_bindings("batch"), std::runtime_error);
  ImportOptions o;
  o.bindings = {{"heads", 4}};
  try {
    import_onnx_model(linear_model(), "linear", o);
    FAIL() << "binding an unknown dim must fail";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no dim named 'heads'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("batch, seq"), std::string::npos) << e.what();
  }
}

TEST(Import, ParametersFromInitializersConstantsAndMetadata) {
  auto m = make_model();
  add_input(m, "x", {std::string("batch"), std::int64_t{16}});
  add_input(m, "w_in", {std::int64_t{16}, std::int64_t{16}});  // weight-free convention
  auto* meta = m.add_metadata_props();
  meta->set_key(kParametersMetadataKey);
  meta->set_value("w_in");
  add_node(m, "MatMul", {"x", "w_in"}, {"h1"});
  add_constant(m, float_tensor("w_const", {16, 8}));  // a weight held in a Constant node
  add_node(m, "MatMul", {"h1", "w_const"}, {"h2"});
  add_constant(m, float_tensor("table", {8}));        // a Constant used as data, not a weight
  add_node(m, "Mul", {"h2", "table"}, {"h3"});
  add_initializer(m, float_tensor("bias", {8}));      // initializer bias: a parameter
  add_node(m, "Add", {"h3", "bias"}, {"y"});
  add_output(m, "y", {std::string("batch"), std::int64_t{8}});
  Graph g = import_onnx_model(m, "params");
  EXPECT_TRUE(g.tensor(g.find_tensor("w_in")).is_parameter);
  EXPECT_TRUE(g.tensor(g.find_tensor("w_const")).is_parameter);
  EXPECT_FALSE(g.tensor(g.find_tensor("table")).is_parameter);
  EXPECT_TRUE(g.tensor(g.find_tensor("bias")).is_parameter);
  ASSERT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(g.tensor(g.inputs[0]).name, "x");
  const ModelStats s = compute_model_stats(g);
  EXPECT_TRUE(same(s.parameter_count, 16 * 16 + 16 * 8 + 8));
  EXPECT_TRUE(same(s.parameter_bytes, 4 * (16 * 16 + 16 * 8 + 8)));
}

// PyTorch's exporter merges equal initializers: two deep-copied Linear layers exported with
// their initial values read as one weight feeding two MatMuls. The tied embedding (a Gather
// and a MatMul of one table) is sharing by design and is not listed.
TEST(Import, AWeightFeedingSeveralIdenticalOperatorsIsNoted) {
  auto m = make_model();
  add_input(m, "ids", {std::string("batch")}, onnx::TensorProto::INT64);
  add_initializer(m, float_tensor("table", {10, 16}));
  add_node(m, "Gather", {"table", "ids"}, {"x"});
  add_initializer(m, float_tensor("w", {16, 16}));
  add_node(m, "MatMul", {"x", "w"}, {"h1"}, "layers.0/MatMul");
  add_node(m, "MatMul", {"h1", "w"}, {"h2"}, "layers.1/MatMul");
  add_node(m, "Transpose", {"table"}, {"table_t"});
  add_node(m, "MatMul", {"h2", "table_t"}, {"logits"});
  add_output(m, "logits", {std::string("batch"), std::int64_t{10}});
  Graph g = import_onnx_model(m, "merged");
  const auto notes = shared_weight_notes(g);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].rfind("weight 'w' feeds input 1 of 2 MatMul operators ('layers.0/MatMul', 'layers.1/MatMul')", 0), 0u)
      << notes[0];
  EXPECT_TRUE(same(compute_model_stats(g).parameter_count, 10 * 16 + 16 * 16));  // counted once, as the note says
}

TEST(Import, MetadataNamingAMissingInputIsAnError) {
  auto m = linear_model();
  auto* meta = m.add_metadata_props();
  meta->set_key(kParametersMetadataKey);
  meta->set_value("nope");
  EXPECT_THROW(import_onnx_model(m, "linear"), std::runtime_error);
}

TEST(Import, BatchNormRunningStatisticsAreNotParameters) {
  auto m = make_model();
  add_input(m, "x", {std::string("batch"), std::int64_t{4}, std::int64_t{8}, std::int64_t{8}});
  for (const char* name : {"scale", "B", "mean", "var"}) add_initializer(m, float_tensor(name, {4}));
  add_node(m, "BatchNormalization", {"x", "scale", "B", "mean", "var"}, {"y"});
  add_output(m, "y", {std::string("batch"), std::int64_t{4}, std::int64_t{8}, std::int64_t{8}});
  Graph g = import_onnx_model(m, "bn");
  EXPECT_TRUE(g.tensor(g.find_tensor("scale")).is_parameter);
  EXPECT_TRUE(g.tensor(g.find_tensor("B")).is_parameter);
  EXPECT_FALSE(g.tensor(g.find_tensor("mean")).is_parameter);
  EXPECT_FALSE(g.tensor(g.find_tensor("var")).is_parameter);
}

TEST(Import, ExternalDataIsLocatedNotRead) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(symtensor::testing::temp_path("symtensor_external"));
  fs::create_directories(dir);
  // A sparse 64 GiB weight file: reading it would take minutes and fill memory.
  const fs::path data = dir / "weights.bin";
  { std::ofstream(data.string()).put('\0'); }
  fs::resize_file(data, std::uintmax_t{64} << 30);
  auto m = linear_model();
  auto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_float_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  for (auto [k, v] : {std::pair{"location", "weights.bin"}, std::pair{"offset", "4096"}, std::pair{"length", "8192"}}) {
    auto* e = w->add_external_data();
    e->set_key(k);
    e->set_value(v);
  }
  const fs::path model = dir / "model.onnx";
  { std::ofstream(model.string(), std::ios::binary) << m.SerializeAsString(); }
  Graph g = import_onnx_file(model.string());
  const Tensor& t = g.tensor(g.find_tensor("W"));
  EXPECT_TRUE(t.is_parameter);
  EXPECT_EQ(t.initializer.storage, InitializerData::Storage::external);
  EXPECT_EQ(t.initializer.external_location, "weights.bin");
  EXPECT_EQ(t.initializer.external_offset, 4096);
  EXPECT_EQ(t.initializer.external_length, 8192);
  EXPECT_TRUE(same(compute_model_stats(g).parameter_count, 64 * 32));
  fs::remove_all(dir);
}

TEST(Import, ExporterReshapeSubgraphFoldsToSymbolicShape) {
  // PyTorch's head split: Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)),
  //                                         Unsqueeze(Gather(Shape(x), 1)), [4], [16]))
  auto m = make_model();
  add_input(m, "x", {std::string("batch"), std::string("seq"), std::int64_t{64}});
  add_node(m, "Shape", {"x"}, {"shape"});
  add_constant(m, int64_tensor("i0", {0}));
  add_constant(m, int64_tensor("i1", {1}));
  m.mutable_graph()->mutable_node(1)->mutable_attribute(0)->mutable_t()->clear_dims();  // scalar index
  m.mutable_graph()->mutable_node(2)->mutable_attribute(0)->mutable_t()->clear_dims();
  add_node(m, "Gather", {"shape", "i0"}, {"b"});
  add_node(m, "Gather", {"shape", "i1"}, {"s"});
  add_constant(m, int64_tensor("axes0", {0}));
  add_node(m, "Unsqueeze", {"b", "axes0"}, {"b1"});
  add_node(m, "Unsqueeze", {"s", "axes0"}, {"s1"});
  add_constant(m, int64_tensor("heads", {4}));
  add_constant(m, int64_tensor("dhead", {16}));
  auto* cat = add_node(m, "Concat", {"b1", "s1", "heads", "dhead"}, {"target"});
  add_int_attr(cat, "axis", 0);
  add_node(m, "Reshape", {"x", "target"}, {"y"});
  add_output(m, "y", {std::string(""), std::string(""), std::int64_t{4}, std::int64_t{16}});
  Graph g = import_onnx_model(m, "reshape");
  const Tensor& y = g.tensor(g.find_tensor("y"));
  ASSERT_EQ(y.shape.size(), 4u);
  EXPECT_TRUE(same(y.shape[0], g.symbols.get("batch")));
  EXPECT_TRUE(same(y.shape[1], g.symbols.get("seq")));
  EXPECT_TRUE(same(y.shape[2], 4));
  EXPECT_TRUE(same(y.shape[3], 16));
}

TEST(Import, FlatteningReshapeGivesProductOfSymbols) {
  auto m = make_model();
  add_input(m, "x", {std::string("batch"), std::string("seq"), std::int64_t{64}});
  add_constant(m, int64_tensor("target", {-1, 64}));
  add_node(m, "Reshape", {"x", "target"}, {"y"});
  add_output(m, "y", {std::string(""), std::int64_t{64}});
  Graph g = import_onnx_model(m, "flatten");
  const Tensor& y = g.tensor(g.find_tensor("y"));
  ASSERT_EQ(y.shape.size(), 2u);
  EXPECT_TRUE(same(y.shape[0], g.symbols.get("batch") * g.symbols.get("seq")));
}

// The batch dim is found from the graph, whatever its name; a static model is planned on
// its static batch unless its graph bakes that batch in.
onnx::ModelProto flatten_model(DimSpec batch, bool baked) {
  onnx::ModelProto m = make_model();
  add_input(m, "image", {batch, std::int64_t{3}, std::int64_t{4}, std::int64_t{4}});
  add_initializer(m, int64_tensor("target", {baked ? 12 : 0, 48}));
  add_node(m, "Reshape", {"image", "target"}, {"flat"});
  add_initializer(m, float_tensor("w", {48, 10}));
  add_node(m, "MatMul", {"flat", "w"}, {"logits"});
  add_output(m, "logits", {batch, std::int64_t{10}});
  return m;
}

TEST(BatchDim, FoundUnderTheExportersName) {
  ImportOptions o;
  o.bindings = {{"p2o.DynamicDimension.0", 12.0}};
  Graph g = import_onnx_model(flatten_model(std::string("p2o.DynamicDimension.0"), false), "named", o);
  EXPECT_EQ(g.batch_dim, "p2o.DynamicDimension.0");
  o.batch_dim = "batch";
  try {
    import_onnx_model(flatten_model(std::string("p2o.DynamicDimension.0"), false), "named", o);
    FAIL() << "--batch-dim batch accepted for a model without that dim";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("--batch-dim batch: the model has no dim named 'batch'"), std::string::npos)
        << e.what();
  }
}

TEST(BatchDim, StaticModelIsPlannedOnItsStaticBatch) {
  Graph g = import_onnx_model(flatten_model(std::int64_t{12}, false), "static");
  EXPECT_EQ(g.batch_dim, "batch");
  EXPECT_EQ(g.symbols.bindings().at("batch"), 12.0);
  const Tensor& logits = g.tensor(g.find_tensor("logits"));
  EXPECT_TRUE(logits.shape.at(0).is_equal(g.symbols.get("batch"))) << logits.shape.at(0);
}

TEST(BatchDim, StaticModelThatBakesItsBatchKeepsStaticShapes) {
  Graph g = import_onnx_model(flatten_model(std::int64_t{12}, true), "baked");
  EXPECT_EQ(g.batch_dim, "");
  ASSERT_EQ(g.metadata.count(kStaticBatchMetadataKey), 1u);
  EXPECT_NE(g.metadata.at(kStaticBatchMetadataKey).find("static (batch 12)"), std::string::npos);
  EXPECT_TRUE(g.tensor(g.find_tensor("logits")).shape.at(0).is_equal(12));
}

}  // namespace
}  // namespace symtensor::compiler
