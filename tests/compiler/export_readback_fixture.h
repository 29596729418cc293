#pragma once
// The export read-back tests' tools (export_readback_*_test.cc): Megatron-LM's argument table
// and parser (names and types from FRAMEWORKS.md), the fixture that writes a model, imports it
// and reads a target's files back with Python (tomllib, ast), a scaled cluster, an extra file.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/export/export.h"
#include "compiler/export/recipe.h"
#include "compiler/onnx_import/import.h"
#include "compiler/search/make_plan.h"
#include "compiler/strategies/strategy.h"
#include "hardware/cluster.h"
#include "onnx_models/hf_config.h"
#include "onnx_models/model_zoo.h"
#include "onnx_models/presets.h"

namespace symtensor::compiler::readback_testing {

namespace fs = std::filesystem;

// ---- Megatron-LM's argument table (names and types from FRAMEWORKS.md) ------------------
enum class Kind { integer, number, flag, choice, layer_pattern };
struct ArgSpec {
  Kind kind;
  std::vector<std::string> choices = {};
};

inline const std::map<std::string, ArgSpec>& megatron_table() {
  static const std::map<std::string, ArgSpec> t = {
      // 1a model
      {"num-layers", {Kind::integer}}, {"mtp-num-layers", {Kind::integer}}, {"hidden-size", {Kind::integer}},
      {"ffn-hidden-size", {Kind::integer}},
      {"num-attention-heads", {Kind::integer}}, {"group-query-attention", {Kind::flag}}, {"num-query-groups", {Kind::integer}},
      {"kv-channels", {Kind::integer}}, {"swiglu", {Kind::flag}}, {"squared-relu", {Kind::flag}}, {"qk-layernorm", {Kind::flag}},
      {"apply-layernorm-1p", {Kind::flag}}, {"rotary-percent", {Kind::number}},
      {"use-rope-scaling", {Kind::flag}}, {"rope-scaling-factor", {Kind::number}},
      {"normalization", {Kind::choice, {"LayerNorm", "RMSNorm"}}}, {"norm-epsilon", {Kind::number}},
      {"position-embedding-type", {Kind::choice, {"learned_absolute", "rope", "yarn", "mrope", "relative", "none"}}},
      {"rotary-base", {Kind::integer}}, {"max-position-embeddings", {Kind::integer}}, {"seq-length", {Kind::integer}},
      {"untie-embeddings-and-output-weights", {Kind::flag}}, {"disable-bias-linear", {Kind::flag}},
      {"add-qkv-bias", {Kind::flag}}, {"attention-dropout", {Kind::number}}, {"hidden-dropout", {Kind::number}},
      {"make-vocab-size-divisible-by", {Kind::integer}}, {"vocab-size", {Kind::integer}},
      {"tokenizer-type", {Kind::choice, {"NullTokenizer", "GPT2BPETokenizer", "HuggingFaceTokenizer", "Llama2Tokenizer"}}},
      // 1b MLA
      {"multi-latent-attention", {Kind::flag}}, {"q-lora-rank", {Kind::integer}}, {"kv-lora-rank", {Kind::integer}},
      {"qk-head-dim", {Kind::integer}}, {"qk-pos-emb-head-dim", {Kind::integer}}, {"v-head-dim", {Kind::integer}},
      {"rope-type", {Kind::choice, {"rope", "yarn"}}}, {"rotary-scaling-factor", {Kind::number}}, {"mscale", {Kind::number}},
      {"mscale-all-dim", {Kind::number}},
      // 1c MoE
      {"num-experts", {Kind::integer}}, {"moe-ffn-hidden-size", {Kind::integer}}, {"moe-router-topk", {Kind::integer}},
      {"moe-token-dispatcher-type", {Kind::choice, {"allgather", "alltoall", "flex"}}}, {"moe-grouped-gemm", {Kind::flag}},
      {"moe-flex-dispatcher-backend", {Kind::choice, {"deepep", "hybridep", "ncclep"}}},
      {"moe-expert-capacity-factor", {Kind::number}},
      {"moe-router-load-balancing-type", {Kind::choice, {"aux_loss", "seq_aux_loss", "global_aux_loss", "sinkhorn", "none"}}},
      {"moe-aux-loss-coeff", {Kind::number}}, {"expert-model-parallel-size", {Kind::integer}},
      {"moe-shared-expert-intermediate-size", {Kind::integer}}, {"moe-layer-freq", {Kind::layer_pattern}},
      {"moe-router-score-function", {Kind::choice, {"softmax", "sigmoid", "sqrtsoftplus"}}},
      {"moe-router-enable-expert-bias", {Kind::flag}}, {"moe-router-num-groups", {Kind::integer}},
      {"moe-router-group-topk", {Kind::integer}}, {"moe-router-topk-scaling-factor", {Kind::number}},
      {"moe-router-pre-softmax", {Kind::flag}},
      {"expert-tensor-parallel-size", {Kind::integer}},
      // 1d precision
      {"bf16", {Kind::flag}}, {"fp16", {Kind::flag}}, {"fp8-format", {Kind::choice, {"e4m3", "hybrid"}}},
      {"fp8-recipe", {Kind::choice, {"tensorwise", "delayed", "mxfp8", "blockwise"}}},
      // 1e parallelism
      {"tensor-model-parallel-size", {Kind::integer}}, {"pipeline-model-parallel-size", {Kind::integer}},
      {"context-parallel-size", {Kind::integer}}, {"cp-comm-type", {Kind::choice, {"p2p", "a2a", "allgather", "a2a+p2p"}}},
      {"sequence-parallel", {Kind::flag}}, {"num-virtual-stages-per-pipeline-rank", {Kind::integer}},
      {"decoder-first-pipeline-num-layers", {Kind::integer}}, {"decoder-last-pipeline-num-layers", {Kind::integer}},
      {"account-for-embedding-in-pipeline-split", {Kind::flag}}, {"account-for-loss-in-pipeline-split", {Kind::flag}},
      {"use-distributed-optimizer", {Kind::flag}}, {"overlap-grad-reduce", {Kind::flag}}, {"use-megatron-fsdp", {Kind::flag}},
      {"data-parallel-sharding-strategy", {Kind::choice, {"no_shard", "optim", "optim_grads", "optim_grads_params"}}},
      {"ckpt-format", {Kind::choice, {"torch", "torch_dist", "torch_dcp", "fsdp_dtensor"}}},
      {"recompute-granularity", {Kind::choice, {"full", "selective"}}}, {"recompute-method", {Kind::choice, {"uniform", "block"}}},
      {"recompute-num-layers", {Kind::integer}}, {"micro-batch-size", {Kind::integer}}, {"global-batch-size", {Kind::integer}},
      {"cpu-offloading", {Kind::flag}}, {"cpu-offloading-num-layers", {Kind::integer}},
      // 1f benchmark launch
      {"mock-data", {Kind::flag}}, {"train-iters", {Kind::integer}}, {"lr", {Kind::number}}, {"min-lr", {Kind::number}},
      {"lr-decay-style", {Kind::choice, {"constant", "linear", "cosine", "inverse-square-root", "WSD"}}},
      {"lr-warmup-iters", {Kind::integer}}, {"weight-decay", {Kind::number}}, {"clip-grad", {Kind::number}},
      {"adam-beta1", {Kind::number}}, {"adam-beta2", {Kind::number}}, {"eval-iters", {Kind::integer}},
      {"eval-interval", {Kind::integer}}, {"log-interval", {Kind::integer}},
  };
  return t;
}

struct MegatronArgs {
  std::map<std::string, std::string> values;  // flags map to ""
  int world = 0;
  bool one_connection = false;  // CUDA_DEVICE_MAX_CONNECTIONS=1 on the launch line
  bool has(const std::string& f) const { return values.count(f) > 0; }
  long long i(const std::string& f) const { return has(f) ? std::stoll(values.at(f)) : 0; }
  long long i(const std::string& f, long long fallback) const { return has(f) ? std::stoll(values.at(f)) : fallback; }
  double d(const std::string& f) const { return std::stod(values.at(f)); }
  const std::string& s(const std::string& f) const { return values.at(f); }
};

// --moe-layer-freq: an int N (every N-th layer MoE) or Megatron's pattern "([0]*3+[1]*58)";
// the per-layer list, or nullopt when it is neither.
inline std::optional<std::vector<int>> layer_pattern(const std::string& v, int layers) {
  std::vector<int> out;
  if (!v.empty() && v.find_first_not_of("0123456789") == std::string::npos) {
    const int n = std::stoi(v);
    for (int l = 0; l < layers; ++l) out.push_back(n > 0 && l % n == 0 ? 1 : 0);
    return out;
  }
  if (v.size() < 2 || v.front() != '(' || v.back() != ')') return std::nullopt;
  std::istringstream in(v.substr(1, v.size() - 2));
  for (std::string term; std::getline(in, term, '+');) {
    int value = 0, count = 0;
    char close = 0, star = 0;
    std::istringstream t(term);
    if (t.get() != '[' || !(t >> value >> close >> star >> count) || close != ']' || star != '*' || !t.eof()) return std::nullopt;
    out.insert(out.end(), count, value);
  }
  return out;
}

inline bool is_integer(const std::string& v) {
  return !v.empty() && v.find_first_not_of("0123456789") == std::string::npos;
}
inline bool is_number(const std::string& v) {
  char* end = nullptr;
  std::strtod(v.c_str(), &end);
  return !v.empty() && end == v.c_str() + v.size();
}

// As argparse reads `$(grep -v '^#' FILE)`: every line a known flag with a value of its type.
inline MegatronArgs parse_megatron(const std::string& text) {
  MegatronArgs a;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# launch:", 0) == 0) {
      std::istringstream words(line);
      int nodes = 0, gpus = 0;
      for (std::string w; words >> w;) {
        if (w == "--nnodes") words >> nodes;
        if (w == "--nproc-per-node") words >> gpus;
        if (w == "CUDA_DEVICE_MAX_CONNECTIONS=1") a.one_connection = true;
      }
      a.world = nodes * gpus;
    }
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::vector<std::string> parts;
    for (std::string w; words >> w;) parts.push_back(w);
    EXPECT_TRUE(parts[0].rfind("--", 0) == 0) << "not a flag: " << line;
    const std::string name = parts[0].substr(2);
    const auto spec = megatron_table().find(name);
    if (spec == megatron_table().end()) {
      ADD_FAILURE() << "--" << name << " is not a Megatron-LM argument of the table";
      continue;
    }
    EXPECT_FALSE(a.has(name)) << "--" << name << " given twice";
    if (spec->second.kind == Kind::flag) {
      EXPECT_EQ(parts.size(), 1u) << "--" << name << " takes no value: " << line;
      a.values[name] = "";
      continue;
    }
    if (parts.size() != 2) {
      ADD_FAILURE() << "--" << name << " needs one value: " << line;
      continue;
    }
    const std::string& v = parts[1];
    switch (spec->second.kind) {
      case Kind::integer: EXPECT_TRUE(is_integer(v)) << "--" << name << " needs an integer: " << v; break;
      case Kind::number: EXPECT_TRUE(is_number(v)) << "--" << name << " needs a number: " << v; break;
      case Kind::choice:
        EXPECT_NE(std::find(spec->second.choices.begin(), spec->second.choices.end(), v), spec->second.choices.end())
            << "--" << name << " " << v;
        break;
      case Kind::layer_pattern: EXPECT_TRUE(layer_pattern(v, 1).has_value()) << "--" << name << " " << v; break;
      case Kind::flag: break;
    }
    a.values[name] = v;
  }
  return a;
}

// Megatron-LM's own checks at launch (FRAMEWORKS.md 1e) and the batch triple.
struct MegatronParallel {
  long long tp, pp, cp, dp, mbs, gbs, accumulation;
};
inline MegatronParallel megatron_parallel(const MegatronArgs& a) {
  MegatronParallel p{};
  p.tp = a.i("tensor-model-parallel-size"), p.pp = a.i("pipeline-model-parallel-size"), p.cp = a.i("context-parallel-size", 1);
  EXPECT_GT(a.world, 0);
  EXPECT_EQ(a.world % (p.tp * p.pp * p.cp), 0);
  p.dp = a.world / (p.tp * p.pp * p.cp);
  p.mbs = a.i("micro-batch-size"), p.gbs = a.i("global-batch-size");
  EXPECT_EQ(p.gbs % (p.mbs * p.dp), 0) << "global batch % (micro-batch x dp)";
  p.accumulation = p.gbs / (p.mbs * p.dp);
  EXPECT_EQ(a.i("num-attention-heads") % p.tp, 0);
  EXPECT_EQ(a.i("num-query-groups", a.i("num-attention-heads")) % p.tp, 0);
  EXPECT_GE(a.i("max-position-embeddings"), a.i("seq-length"));
  EXPECT_TRUE(a.has("mock-data") && a.s("tokenizer-type") == "NullTokenizer" && a.has("vocab-size"));
  EXPECT_LE(a.d("min-lr"), a.d("lr"));
  EXPECT_GE(a.i("eval-interval"), a.i("train-iters"));
  if (a.has("use-megatron-fsdp")) {
    EXPECT_EQ(a.s("ckpt-format"), "fsdp_dtensor");
  }
  EXPECT_EQ(a.one_connection, (p.tp > 1 || p.cp > 1) && !a.has("use-megatron-fsdp"));
  return p;
}

// Layers per pipeline stage as Megatron-LM splits them under the flags written.
inline std::vector<int> megatron_stages(const MegatronArgs& a) {
  const int layers = static_cast<int>(a.i("num-layers")), pp = static_cast<int>(a.i("pipeline-model-parallel-size"));
  const int vp = static_cast<int>(a.i("num-virtual-stages-per-pipeline-rank", 1));
  std::vector<int> counts(pp, layers / pp);
  if (a.has("decoder-first-pipeline-num-layers")) {
    EXPECT_GT(pp, 1);
    const int first = static_cast<int>(a.i("decoder-first-pipeline-num-layers")), last = static_cast<int>(a.i("decoder-last-pipeline-num-layers"));
    std::fill(counts.begin(), counts.end(), pp > 2 ? (layers - first - last) / (pp - 2) : 0);
    counts.front() = first, counts.back() = last;
  } else if (a.has("account-for-embedding-in-pipeline-split")) {
    EXPECT_TRUE(a.has("account-for-loss-in-pipeline-split"));
    EXPECT_EQ((layers + 2) % (pp * vp), 0);
    std::fill(counts.begin(), counts.end(), (layers + 2) / pp);
    --counts.front(), --counts.back();
  } else {
    EXPECT_EQ(layers % (pp * vp), 0) << "even stages need layers % (pp x vp) == 0";
  }
  return counts;
}

// ---- fixtures ---------------------------------------------------------------------------
class ExportReadback : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("symtensor_readback_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The model written to a file and imported from it (its float constants are read from there).
  Graph model(models::ModelConfig config, double batch = 16, double seq = 32) {
    config_ = config;
    const std::string path = (dir_ / (config.name + ".onnx")).string();
    models::save_model(models::build_model(config), path);
    ImportOptions o;
    o.bindings = {{"batch", batch}, {"seq", seq}};
    o.warn_opaque = false;
    return import_onnx_file(path, o);
  }
  // A Hugging Face config.json read by `models --hf-config`, named `name`.
  Graph hf_model(const std::string& json, const std::string& name) {
    models::ModelConfig config = models::load_hf_config(file(name + ".json", json));
    config.name = name;
    return model(config);
  }
  Graph preset(const std::string& name, const models::Overrides& o = {}) {
    return model(models::apply_overrides(models::preset_config(name), o));
  }
  Plan plan(Graph& g, const hardware::Cluster& c, const std::string& knobs,
            hardware::Precision precision = hardware::Precision::bf16) {
    StrategyOptions so;
    so.megatron = knobs;
    so.precision = precision;
    return make_plan("megatron", g, c, so);
  }
  std::string file(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  // stdout of a Python one-liner run on `path`, as JSON.
  std::optional<nlohmann::json> python_json(const std::string& program, const std::string& path) {
    const std::string script = file("read.py", program);
    const std::string command = "/usr/bin/python3 " + script + " " + path + " 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    if (!pipe) return std::nullopt;
    std::string out;
    char buffer[4096];
    while (const std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
    if (pclose(pipe) != 0) {
      ADD_FAILURE() << "python: " << out;
      return std::nullopt;
    }
    return nlohmann::json::parse(out);
  }
  nlohmann::json toml(const std::string& text) {
    if (std::system("/usr/bin/python3 -c 'import tomllib' >/dev/null 2>&1") != 0) return nullptr;
    const auto j = python_json("import json, sys, tomllib\nprint(json.dumps(tomllib.load(open(sys.argv[1], 'rb'))))\n",
                               file("job.toml", text));
    return j.value_or(nlohmann::json());
  }
  // The keyword arguments of TransformerModelArgs(...) in the flavor module (ast, never run).
  nlohmann::json flavor_args(const std::string& text) {
    const auto j = python_json(
        "import ast, json, sys\n"
        "tree = ast.parse(open(sys.argv[1]).read())\n"
        "calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, 'id', '') == 'TransformerModelArgs']\n"
        "print(json.dumps({k.arg: ast.literal_eval(k.value) for k in calls[0].keywords}))\n",
        file("symtensor_flavor.py", text));
    return j.value_or(nlohmann::json());
  }

  fs::path dir_;
  models::ModelConfig config_;
};

inline hardware::Cluster cluster(const std::string& profile, int nodes, int gpus) {
  return hardware::scale_cluster(hardware::load_cluster(profile), nodes, gpus);
}

inline std::string extra(const ExportResult& r, const std::string& name) {
  for (const auto& [n, text] : r.extra)
    if (n == name) return text;
  return "";
}

}  // namespace symtensor::compiler::readback_testing
