#pragma once
// Megatron-LM's layout of a transformer with fixed knobs. The mesh is
// [pipeline (outer level) | data parallel | tensor parallel (inside a node)]; column-
// parallel (cut n) for the first weight GEMMs after a normalization, row-parallel (cut k)
// for the weight GEMM consuming their result, attention GEMMs cut on the heads loop, the
// vocabulary head (and the embedding lookup, when its iteration space has a vocabulary
// loop) cut on the vocabulary, every batch loop over the data-parallel axes, the rest by
// propagation. Sequence parallelism cuts the normalization regions and residual adds on
// the sequence loop over the tensor-parallel axis. Layers are split evenly over stages.
//
// Mixtures of experts follow Megatron-Core's "MoE parallel folding": the expert GEMMs
// (weight GEMMs with an expert loop) use their own etp x ep x edp grid folded over the
// tp x dp ranks of a stage: the expert loop cut over the ep axes (the innermost data-
// parallel ranks, and the tensor-parallel ones too when etp = 1), their batch loop over
// the remaining edp axes, their column/row loops over tp only when etp = tp. The token
// dispatch and combine (routing operators) keep the batch cut of the attention part, so
// tokens reach the experts by an all-to-all over the ep axes and return by another.
// See compiler/analysis/transformer_structure.h for how the structure is found.
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ops/op_semantics.h"
#include "compiler/strategies/strategy.h"

namespace symtensor::compiler {

struct MegatronKnobs {
  int tp = 1, pp = 1;
  int cp = 1;           // context parallelism: the sequence of every operator, attention's queries
  int dp = 0;           // 0: implied, devices / (tp * pp * cp)
  int mb = 1;           // micro-batch size (samples)
  int vp = 1;           // virtual stages per device (> 1: interleaved 1F1B)
  bool sp = false;      // sequence parallelism
  RecomputePolicy recompute = RecomputePolicy::none;
  bool distopt = false; // distributed optimizer
  int ep = 1;           // expert parallelism (MoE models)
  int etp = 0;          // expert tensor parallelism: 1 or tp; 0: the same as tp
  // Megatron-FSDP (--use-megatron-fsdp): 0 off, 2 optim_grads, 3 optim_grads_params
  // (the ZeRO stage it is; it implies the distributed optimizer).
  int fsdp = 0;
  // HSDP (torchtitan's data_parallel_replicate_degree): the data-parallel ranks form
  // `replicate` replicas (the outermost data-parallel ranks) over which the model states are
  // replicated; the sharding (fsdp, distopt) runs inside each replica (Plan::replicate_axes).
  // 1: sharded over every data-parallel rank. Needs fsdp or distopt.
  int replicate = 1;
  // Layers on the first and last pipeline stages (--decoder-first/last-pipeline-num-layers);
  // 0: even stages, or, where the layers do not divide, the embedding and the loss counted as
  // a layer each (--account-for-embedding/loss-in-pipeline-split).
  int first = 0, last = 0;
  // --cpu-offloading-num-layers: the first `offload` layers' saved activations live in host
  // memory (Plan::offload_layers; pp = 1 only, as Megatron-LM allows).
  int offload = 0;
  // --make-vocab-size-divisible-by: a vocabulary that tp does not divide is padded to a
  // multiple of this x tp, as Megatron-LM pads it (GPT-3's 50257 at tp=4: 50688), and priced
  // so (NodeCut::padded_extents). A vocabulary that tp divides is planned as it is. 0 (not a
  // knob value): nothing padded, such a vocabulary refused (the SymTensor search's seeds).
  int vocab_div = 128;
  // --moe-token-dispatcher-type alltoall, or flex with --moe-flex-dispatcher-backend deepep /
  // hybridep (Plan::moe_dispatcher); the latter need ep > 1.
  MoeDispatcher dispatcher = MoeDispatcher::alltoall;
  // --overlap-moe-expert-parallel-comm (Plan::moe_comm_overlap): needs ep > 1, vp > 1 when
  // pp > 1, and no full recomputation, as Megatron-Core checks.
  bool ep_overlap = false;

  friend bool operator==(const MegatronKnobs&, const MegatronKnobs&) = default;
};

// Layers per pipeline stage under the knobs (first stage first); throws a one-line error
// naming the knobs when they do not split the `layers`.
std::vector<int> megatron_stage_layers(const MegatronKnobs& knobs, int layers);

// How Megatron-LM splits `layers` over `pp` stages that do not split them evenly, as
// (first, last) for --decoder-first/last-pipeline-num-layers: {0, 0} (Megatron's own split)
// when pp divides layers + 2, else the middle stages at ceil(layers / pp) each (floor where
// ceil leaves the ends less than a layer each) and the first and last sharing the rest, both
// orders of an odd rest. Empty when pp divides the layers, is below 2 or above them, or no
// such split keeps every stage within ceil(layers / pp).
std::vector<std::pair<int, int>> megatron_uneven_splits(int layers, int pp);

// "tp=8,pp=8,cp=2,mb=1,vp=3,sp=1,recompute=selective,distopt=1,ep=8,etp=1,fsdp=3,replicate=4,vocab_div=128,
// dispatcher=hybridep,ep_overlap=1" (any
// subset, any order; empty text gives the defaults). Throws "--megatron: ..." naming the bad item.
MegatronKnobs parse_megatron_knobs(const std::string& text);
std::string to_string(const MegatronKnobs& knobs);  // ep, etp, fsdp, vocab_div, offload, dispatcher, ep_overlap only when set

// Megatron-LM's padded vocabulary (_vocab_size_with_padding): `vocab` rounded up to a multiple
// of divisible_by x tp.
long long megatron_padded_vocabulary(long long vocab, int divisible_by, int tp);
// The --make-vocab-size-divisible-by that pads `vocab` to `padded` at tp: 128 when it does,
// else the least that does; 0 when none does.
int megatron_vocab_divisor(long long vocab, long long padded, int tp);

// The same text read as constraints: the knobs, and which keys it gave (a key given twice is
// refused). fully_fixed(): tp, pp and mb are all given — the knobs that fix the mesh (dp is
// implied) and the micro-batch count; such a set is one plan, every knob it leaves out at its
// default (cp=1, vp=1, sp=0, recompute=none, distopt=0, ep=1, etp=tp, fsdp=0), as Megatron-LM
// defaults them. Otherwise the given knobs constrain a search of the rest
// (make_megatron_best_plan).
struct MegatronConstraints {
  MegatronKnobs knobs;
  std::set<std::string> given;
  std::vector<std::string> items;  // "key=value" as given, in order
  bool has(const std::string& key) const { return given.count(key) > 0; }
  bool fully_fixed() const;
  std::string text() const;  // the items joined by commas
};
MegatronConstraints parse_megatron_constraints(const std::string& text);
// The expert tensor-parallel size the knobs mean (etp, or tp when etp is 0).
inline int expert_tp(const MegatronKnobs& k) { return k.etp > 0 ? k.etp : k.tp; }

// Mesh factors (outermost level first) and the axes of each role.
struct MegatronMesh {
  std::vector<std::vector<int>> factors;
  int pipeline_axis = -1;
  std::vector<int> dp_axes;  // major to minor
  std::vector<int> cp_axes;  // major to minor: inside a node first, as Megatron-Core orders ranks (tp, cp, dp, pp)
  int tp_axis = -1;
  // Expert layers: the axes cutting the expert loop (the innermost data-parallel axes,
  // then tp when etp = 1) and those left for their batch, major to minor. With ep = 1: no
  // ep axes and edp_axes = dp_axes.
  std::vector<int> ep_axes, edp_axes;
  // HSDP: the outermost data-parallel axes, of size knobs.replicate (a level split where it
  // takes part of one); empty when replicate = 1.
  std::vector<int> replicate_axes;
};
// Throws when tp exceeds or does not divide the GPUs per node, cp or pp fits no level, or ep and
// etp do not fold over the tp x dp ranks (etp must be 1 or tp; ep x etp must divide tp x dp;
// with etp = 1 and tp > 1, ep must be a multiple of tp). A data-parallel level is split
// into two axes when the ep ranks take only part of it. ep folds over the data-parallel
// ranks only (not the context-parallel ones).
MegatronMesh megatron_mesh(const hardware::Cluster& cluster, const MegatronKnobs& knobs);

struct TransformerStructure;

// The experts of the model's expert GEMMs (the expert loop's extent), 0 when it has none.
long long expert_count(const Graph& graph, const std::vector<IterationSpace>& spaces, const TransformerStructure& s);

Plan make_megatron_plan(Graph& graph, const hardware::Cluster& cluster, const MegatronKnobs& knobs,
                        const StrategyOptions& options);

// The same for many knob settings of one graph (a search builds dozens): what the layout
// derives from the graph alone (iteration spaces, transformer structure, topological
// order, propagation's numeric shapes and priced redistributions) is found once.
class MegatronLayouts {
 public:
  explicit MegatronLayouts(Graph& graph);
  // With the graph's iteration spaces (NumericGraph::spaces()), which must outlive it.
  MegatronLayouts(Graph& graph, const std::vector<IterationSpace>& spaces);
  ~MegatronLayouts();
  MegatronLayouts(const MegatronLayouts&) = delete;
  MegatronLayouts& operator=(const MegatronLayouts&) = delete;

  Plan make(const hardware::Cluster& cluster, const MegatronKnobs& knobs, const StrategyOptions& options);

  const std::vector<IterationSpace>& spaces() const;
  const TransformerStructure& structure() const;

 private:
  struct Facts;
  void init(const std::vector<IterationSpace>& spaces);
  Graph& graph_;
  std::unique_ptr<Facts> facts_;
};

}  // namespace symtensor::compiler
