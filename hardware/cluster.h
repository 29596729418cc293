#pragma once
// A cluster: one kind of accelerator and a hierarchy of interconnect levels, or a mixed
// fleet of several kinds (groups of nodes of different profiles, `dgx-h100x2+dgx-a100x4`).
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hardware/precision.h"
#include "hardware/stack.h"

namespace symtensor::hardware {

// Achieved/peak for operations of at least `min_flops` FLOPs (a step function).
struct EfficiencyPoint {
  double min_flops = 0;
  double efficiency = 1;
};

// A fused attention kernel's achieved/peak (16-bit peak) on inputs of at least `head_dim`
// and `min_seq` (query length per kernel call), forward and backward separately.
struct AttentionEfficiencyPoint {
  int head_dim = 0;
  double min_seq = 0;
  double forward = 1, backward = 1;
};

struct Device {
  std::string name;
  std::map<Precision, double> peak_flops;  // FLOP/s, dense
  double memory_bytes = 0;
  // Device memory training cannot use (CUDA context, cuBLAS and NCCL workspaces, the
  // caching allocator's fragmentation), as the profile states it; 0 when it states none.
  double memory_reserve_bytes = 0;
  double hbm_bandwidth = 0;                // bytes/s
  double host_link_bandwidth = 0;          // bytes/s per direction to host memory; 0: not stated
  std::vector<EfficiencyPoint> efficiency; // ascending min_flops
  double kernel_launch_s = 0;
  // Low-precision (FP8, MXFP8, NVFP4) GEMMs reach this fraction of the efficiency the curve
  // gives at their peak (the stack's StackKernels::fp8_gemm; 1 when no stack says).
  double low_precision_gemm_factor = 1;
  double fp4_gemm_factor = 1;  // NVFP4's beside it (StackKernels::fp4_gemm)
  double grouped_gemm_factor = 1;  // a mixture's grouped expert GEMMs (StackKernels::grouped_gemm)
  // The fraction of memory_bytes a plan leaves free (--memory-headroom): allocator
  // fragmentation and spikes the cost model does not see. Every "fits" respects it.
  double memory_headroom = 0;
  // Fused attention (FlashAttention-style kernels): the kernel measured, and its efficiency
  // by head dim then sequence (ascending). Empty: attention is priced as a GEMM.
  std::string attention_kernel;
  std::vector<AttentionEfficiencyPoint> attention_efficiency;

  double peak(Precision p) const;               // throws if the profile lacks p
  double usable_memory() const { return memory_bytes * (1 - memory_headroom); }
  double efficiency_for(double flops) const;    // step lookup in `efficiency`
  // Roofline time of one kernel: the larger of FLOPs at the achieved rate for its size and
  // bytes at HBM bandwidth, plus the launch overhead; 0 for no work. The one kernel-time
  // model of SymTensor: the compiler's estimate and the simulator both use it. At fp8 and
  // fp4 (only GEMMs run there) the curve is scaled by low_precision_gemm_factor.
  // `kernel_factor`: a kernel's own factor on the curve (grouped_gemm_factor for expert GEMMs).
  double kernel_seconds(Precision p, double flops, double bytes, double kernel_factor = 1) const;
  // The efficiency of a fused attention kernel: the entries of the largest head dim <= `head_dim`
  // (else the smallest), the last of those with min_seq <= `seq`. nullopt without a table.
  std::optional<double> attention_efficiency_for(double head_dim, double seq, bool backward) const;
  // kernel_seconds of a fused attention kernel at attention_efficiency_for (the GEMM curve
  // without a table).
  double attention_seconds(Precision p, double flops, double bytes, double head_dim, double seq, bool backward) const;

 private:
  // max(FLOPs at `efficiency` of the peak, bytes at HBM bandwidth) + launch; 0 for no work.
  double roofline_seconds(Precision p, double flops, double bytes, double efficiency) const;
};

// mesh: point-to-point links, one per pair of peers (AMD Infinity Fabric inside a node);
// the others give every GPU its whole bandwidth whichever peers it talks to.
enum class LinkKind { switch_fabric, ring, fat_tree, mesh };
std::string_view to_string(LinkKind k);

// One level of the interconnect, innermost first (NVSwitch inside a node, then the
// inter-node fabric, ...). `size` is the fan-out at this level: GPUs per node for
// level 0, nodes per pod (or in all) for level 1.
struct TopologyLevel {
  std::string name;
  int size = 1;
  // bytes/s per GPU per direction; on a mesh the GPU's total egress over its size - 1 links
  double bandwidth = 0;
  double latency_s = 0;
  LinkKind kind = LinkKind::switch_fabric;
  std::string link;  // human description of the hardware, e.g. "NVLink 3 via NVSwitch"

  // Point-to-point links per GPU on a mesh level (size - 1); 0 on any other kind or a
  // mesh of one.
  int mesh_links() const;
  // Bandwidth per direction a GPU has toward the other members of a group with `ranks` GPUs
  // at this level: `bandwidth`, except on a mesh, where the group uses ranks - 1 of the
  // size - 1 links: bandwidth * (ranks - 1) / (size - 1). Only a group of the whole mesh
  // reaches the full egress.
  double group_bandwidth(int ranks) const;
  // Bandwidth to one peer at a time (a tree step, a send): group_bandwidth(2).
  double peer_bandwidth() const;
};

// One group of a mixed fleet: the nodes of one profile, ranks first_rank .. first_rank +
// devices - 1 (groups follow each other in the order given).
struct DeviceGroup {
  std::string profile;  // the profile's name ("dgx-h100"), which names the group
  Device device;
  std::vector<TopologyLevel> levels;  // the profile's, its outermost level sized to `nodes`
  int nodes = 1;
  int first_rank = 0;
  int devices = 0;
  std::optional<double> price_per_gpu_hour;
  std::optional<double> power_w;
};

// The link between the nodes of two groups (a < b): by default the slower NIC of the pair
// (the smaller outermost-level bandwidth, the larger latency); a fleet YAML may state it.
struct GroupLink {
  int a = 0, b = 0;
  double bandwidth = 0;  // bytes/s per GPU per direction
  double latency_s = 0;
  bool stated = false;   // given in the fleet's YAML, not derived
};

// A device's sustained 16-bit training pace, FLOP/s: the bf16 (else fp16) peak at the
// efficiency of the largest GEMMs of its curve. The speed by which a mixed fleet's groups are
// ranked and their first shares of work sized (the search then rebalances by simulation).
double device_pace(const Device& device);

struct Cluster {
  std::string name;
  std::string source;  // file it was loaded from
  std::string description;  // one line for `symtensor hardware list`
  Device device;
  std::vector<TopologyLevel> levels;  // innermost first
  std::optional<double> price_per_gpu_hour;  // USD
  std::optional<double> power_w;             // per GPU
  // The software that runs plans on it (apply_stack); Stack{}: Megatron-LM's memory
  // conventions, kernels as the profile states them.
  Stack stack;

  // A mixed fleet: its groups (two or more) and the links between them. `device` and `levels`
  // are then the fleet's uniform view, what a plan giving every rank the same work runs at:
  // the slowest group's device (with the least usable memory of any group), level 0 the GPUs
  // of a node (the same count in every group, the least bandwidth), the outermost level every
  // node of the fleet (the least NIC bandwidth of any group or link, the largest latency).
  // Empty for a cluster of one GPU type.
  std::vector<DeviceGroup> groups;
  std::vector<GroupLink> group_links;  // one per pair of groups

  int num_devices() const;
  int devices_per_node() const;  // size of level 0
  bool mixed() const { return !groups.empty(); }
  // The group holding `rank` (0 for a cluster of one type); throws for a rank out of range.
  int group_of_rank(int rank) const;
  // The device of `rank`: its group's (`device` for a cluster of one type).
  const Device& device_of_rank(int rank) const;
  // Bandwidth per direction of `rank`'s own link at topology `level` (its group's).
  double level_bandwidth(int rank, int level) const;
  // The link between groups a and b (a != b); null for a cluster of one type.
  const GroupLink* link_between(int a, int b) const;
};

// The peak of every device of the cluster at `p` (each group's devices at their own peak).
double total_peak(const Cluster& cluster, Precision p);

// Group `g` of a mixed fleet as a cluster of its own (its profile with its nodes; the fleet's
// stack and headroom kept). Throws when the cluster is not mixed or g is out of range.
Cluster group_cluster(const Cluster& fleet, int g);

// The fleet (its mesh, levels and links) with group `g`'s device: what a pipeline stage or a
// batch share lying in group g is priced on. Throws when g is out of range.
Cluster fleet_on_group_device(const Cluster& fleet, int g);

// The groups `groups` (ascending indices, at least one) of a mixed fleet as a cluster of their
// own: one group's group_cluster, or a fleet of those groups named by their clusters joined by
// '+' ("dgx-h100x2+dgx-a100x2"), the links the fleet states between them kept.
Cluster sub_fleet(const Cluster& fleet, const std::vector<int>& groups);

// The proper parts of a mixed fleet of n groups: every set of at least `fewest` and fewer than
// n of its groups (ascending indices), as sub_fleet takes them; none for a cluster of one type.
std::vector<std::vector<int>> fleet_parts(const Cluster& fleet, int fewest);

// The part of a mixed fleet (sub_fleet of some of its groups, one group alone included) whose
// name is `name`; none when the cluster is not mixed, `name` is the fleet's own, or no part has it.
std::optional<Cluster> fleet_part_named(const Cluster& fleet, const std::string& name);

// A mixed fleet of the given clusters (each a profile with its node count, in rank order);
// `links`: links stated (bandwidth, latency) by pair of group indices, the others derived.
// Throws a one-line error naming the group when the groups cannot form one fleet (different
// GPUs per node, not two topology levels, a profile given twice).
Cluster make_fleet(const std::string& name, const std::vector<Cluster>& groups, const std::vector<GroupLink>& links = {});

// Profiles: YAML files documented in hardware/profiles/README.md.
// `name_or_path` is a bundled profile's file stem ("dgx-a100"), a path to a .yaml file, the
// shorthand "NAMExN" (a bundled profile with its outermost level set to N), or a mixed fleet:
// such names joined by '+' ("dgx-h100x2+dgx-a100x4"; errors name the part). A .yaml file
// with `groups:` is a fleet too (README.md).
// Throws std::runtime_error "FILE:LINE:COL: key 'x': problem" on any invalid content.
Cluster load_cluster(const std::string& name_or_path);
// Parses profile text; `source` names it in error messages and in Cluster::source.
Cluster parse_cluster(const std::string& yaml_text, const std::string& source);
// Stems of the bundled profiles (hardware/profiles/*.yaml), sorted.
std::vector<std::string> list_profiles();
// Bundled profiles within a few edits of `name` (case-insensitive), the nearest first:
// the "did you mean" of an unknown name ("dgx-h10" -> dgx-h100). Empty when none is close.
std::vector<std::string> similar_profiles(const std::string& name);
std::string profile_directory();

// `nodes` sets the outermost level's size; `gpus` sets level 0's size (part of a node, any
// count up to the node's size) and, when `nodes` is not given, makes it a single node.
// A mixed fleet cannot be resized (its parts give their nodes): throws.
// A resized mesh level keeps its links' speed: its bandwidth (the egress toward the level's
// other members) becomes bandwidth / (old size - 1) * (new size - 1); a mesh of one holds
// one link's bandwidth.
Cluster scale_cluster(Cluster cluster, std::optional<int> nodes, std::optional<int> gpus);

}  // namespace symtensor::hardware
