// Parsing the --megatron knobs and factoring the mesh for them.
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "compiler/strategies/megatron.h"

namespace symtensor::compiler {
namespace {

int parse_positive(const std::string& key, const std::string& value) {
  std::size_t used = 0;
  int v = 0;
  try {
    v = std::stoi(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || value.empty() || v < 1)
    throw std::runtime_error("--megatron " + key + "=" + value + ": expected a positive integer");
  return v;
}

bool parse_flag(const std::string& key, const std::string& value) {
  if (value == "1" || value == "true" || value == "on") return true;
  if (value == "0" || value == "false" || value == "off") return false;
  throw std::runtime_error("--megatron " + key + "=" + value + ": expected 0 or 1");
}

}  // namespace

MegatronKnobs parse_megatron_knobs(const std::string& text) { return parse_megatron_constraints(text).knobs; }

bool MegatronConstraints::fully_fixed() const { return has("tp") && has("pp") && has("mb"); }

std::string MegatronConstraints::text() const {
  std::string s;
  for (const std::string& item : items) s += (s.empty() ? "" : ",") + item;
  return s;
}

MegatronConstraints parse_megatron_constraints(const std::string& text) {
  MegatronConstraints c;
  MegatronKnobs& k = c.knobs;
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos) throw std::runtime_error("--megatron: '" + item + "' is not KEY=VALUE");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (c.has(key)) throw std::runtime_error("--megatron: '" + key + "' given twice");
    if (key == "tp") k.tp = parse_positive(key, value);
    else if (key == "pp") k.pp = parse_positive(key, value);
    else if (key == "cp") k.cp = parse_positive(key, value);
    else if (key == "dp") k.dp = parse_positive(key, value);
    else if (key == "mb") k.mb = parse_positive(key, value);
    else if (key == "vp") k.vp = parse_positive(key, value);
    else if (key == "sp") k.sp = parse_flag(key, value);
    else if (key == "distopt") k.distopt = parse_flag(key, value);
    else if (key == "ep_overlap") k.ep_overlap = parse_flag(key, value);
    else if (key == "ep") k.ep = parse_positive(key, value);
    else if (key == "etp") k.etp = parse_positive(key, value);
    else if (key == "first") k.first = parse_positive(key, value);
    else if (key == "last") k.last = parse_positive(key, value);
    else if (key == "vocab_div") k.vocab_div = parse_positive(key, value);
    else if (key == "offload") k.offload = parse_positive(key, value);
    else if (key == "replicate") k.replicate = parse_positive(key, value);
    else if (key == "fsdp") {
      if (value != "0" && value != "2" && value != "3")
        throw std::runtime_error("--megatron fsdp=" + value + ": expected 0, 2 (optim_grads) or 3 (optim_grads_params)");
      k.fsdp = value[0] - '0';
    }
    else if (key == "dispatcher") {
      try {
        k.dispatcher = parse_moe_dispatcher(value);
      } catch (const std::exception& e) {
        throw std::runtime_error("--megatron dispatcher=" + value + ": " + e.what());
      }
    } else if (key == "recompute") {
      try {
        k.recompute = parse_recompute(value);
      } catch (const std::exception& e) {
        throw std::runtime_error("--megatron recompute=" + value + ": " + e.what());
      }
    } else {
      throw std::runtime_error("--megatron: unknown knob '" + key + "' (known: tp, pp, cp, dp, mb, vp, sp, recompute, distopt, ep, etp, fsdp, replicate, first, last, vocab_div, offload, dispatcher, ep_overlap)");
    }
    c.given.insert(key);
    c.items.push_back(item);
  }
  return c;
}

std::string to_string(const MegatronKnobs& k) {
  std::string s = "tp=" + std::to_string(k.tp) + ",pp=" + std::to_string(k.pp);
  if (k.cp > 1) s += ",cp=" + std::to_string(k.cp);
  if (k.dp) s += ",dp=" + std::to_string(k.dp);
  s += ",mb=" + std::to_string(k.mb) + ",vp=" + std::to_string(k.vp) + ",sp=" + std::to_string(k.sp ? 1 : 0) +
       ",recompute=" + std::string(to_string(k.recompute)) + ",distopt=" + std::to_string(k.distopt ? 1 : 0);
  if (k.ep > 1 || k.etp > 0) s += ",ep=" + std::to_string(k.ep) + ",etp=" + std::to_string(expert_tp(k));
  if (k.fsdp > 0) s += ",fsdp=" + std::to_string(k.fsdp);
  if (k.replicate > 1) s += ",replicate=" + std::to_string(k.replicate);
  if (k.first > 0) s += ",first=" + std::to_string(k.first);
  if (k.last > 0) s += ",last=" + std::to_string(k.last);
  if (k.vocab_div != 128) s += ",vocab_div=" + std::to_string(k.vocab_div);
  if (k.offload > 0) s += ",offload=" + std::to_string(k.offload);
  if (k.dispatcher != MoeDispatcher::alltoall) s += ",dispatcher=" + std::string(to_string(k.dispatcher));
  if (k.ep_overlap) s += ",ep_overlap=1";
  return s;
}

long long megatron_padded_vocabulary(long long vocab, int divisible_by, int tp) {
  const long long multiple = static_cast<long long>(divisible_by) * tp;
  return (vocab + multiple - 1) / multiple * multiple;
}

int megatron_vocab_divisor(long long vocab, long long padded, int tp) {
  if (vocab < 1 || tp < 1 || padded % tp != 0) return 0;
  if (megatron_padded_vocabulary(vocab, 128, tp) == padded) return 128;
  for (long long d = 1; d <= padded / tp; ++d)
    if (megatron_padded_vocabulary(vocab, static_cast<int>(d), tp) == padded) return static_cast<int>(d);
  return 0;
}

std::vector<int> megatron_stage_layers(const MegatronKnobs& k, int layers) {
  const int pp = k.pp, vp = std::max(k.vp, 1);
  std::vector<int> counts(pp, 0);
  if (pp == 1) {
    // Megatron-LM asserts these need a pipeline; ignoring them would price another plan.
    if (k.first > 0 || k.last > 0) throw std::runtime_error("megatron: first=/last= (layers of the first/last pipeline stage) need pp > 1");
    counts[0] = layers;
    return counts;
  }
  if (k.first > 0 || k.last > 0) {
    // Megatron-LM: the middle stages share what the first and last leave, evenly.
    const int first = k.first > 0 ? k.first : -1, last = k.last > 0 ? k.last : -1;
    const int middle_stages = pp - (first > 0) - (last > 0);
    const int rest = layers - std::max(first, 0) - std::max(last, 0);
    if (rest < 0 || (middle_stages > 0 ? rest % middle_stages != 0 || rest / middle_stages < 1 : rest != 0))
      throw std::runtime_error("megatron: first=" + std::to_string(k.first) + ",last=" + std::to_string(k.last) +
                               " leave " + std::to_string(rest) + " of the " + std::to_string(layers) + " layers to " +
                               std::to_string(middle_stages) + " middle stages unevenly");
    for (int s = 0; s < pp; ++s) counts[s] = middle_stages > 0 ? rest / middle_stages : 0;
    if (first > 0) counts.front() = first;
    if (last > 0) counts.back() = last;
    return counts;
  }
  const int chunks = pp * vp;
  if (layers % chunks == 0) {
    std::fill(counts.begin(), counts.end(), layers / pp);
    return counts;
  }
  if ((layers + 2) % chunks == 0 && (layers + 2) / pp >= 2) {
    // The embedding takes a layer's place in the first chunk and the loss in the last (every
    // stage keeps at least one layer).
    std::fill(counts.begin(), counts.end(), (layers + 2) / pp);
    --counts.front(), --counts.back();
    return counts;
  }
  throw std::runtime_error("megatron: pp=" + std::to_string(pp) + (vp > 1 ? " x vp=" + std::to_string(vp) : std::string()) +
                           " does not divide the " + std::to_string(layers) + " layers, nor " + std::to_string(layers + 2) +
                           " with the embedding and the loss counted as layers; give first=N,last=M");
}

std::vector<std::pair<int, int>> megatron_uneven_splits(int layers, int pp) {
  if (pp < 2 || pp > layers || layers % pp == 0) return {};
  if ((layers + 2) % pp == 0 && (layers + 2) / pp >= 2) return {{0, 0}};
  // Middle stages of ceil(layers / pp) leave the first and last at most that many each; where
  // they leave less than a layer each, floor(layers / pp) (8 layers on 7 stages: 2/1/1/1/1/1/1),
  // if no stage then holds more than ceil(layers / pp).
  const int most = (layers + pp - 1) / pp;
  int middle = most, rest = layers - middle * (pp - 2);
  if (rest < 2) middle = layers / pp, rest = layers - middle * (pp - 2);
  if (rest < 2 || (rest + 1) / 2 > most) return {};
  std::vector<std::pair<int, int>> out{{(rest + 1) / 2, rest / 2}};
  if (rest % 2 != 0) out.emplace_back(rest / 2, (rest + 1) / 2);
  return out;
}

MegatronMesh megatron_mesh(const hardware::Cluster& cluster, const MegatronKnobs& k) {
  const int levels = static_cast<int>(cluster.levels.size());
  const int per_node = cluster.levels.at(0).size;
  if (k.tp > per_node || per_node % k.tp != 0)
    throw std::runtime_error("megatron: tp=" + std::to_string(k.tp) + " must divide the " + std::to_string(per_node) +
                             " GPUs per node of '" + cluster.name + "'");
  std::vector<int> rest(levels);  // per level (innermost first): size left for pp and dp
  for (int l = 0; l < levels; ++l) rest[l] = cluster.levels[l].size;
  rest[0] /= k.tp;
  // Context parallelism next to tensor parallelism: from the innermost level outwards.
  std::vector<int> cp_at(levels, 1);
  int cp_left = k.cp;
  for (int l = 0; l < levels && cp_left > 1; ++l) {
    cp_at[l] = std::gcd(rest[l], cp_left);
    rest[l] /= cp_at[l];
    cp_left /= cp_at[l];
  }
  if (cp_left > 1)
    throw std::runtime_error("megatron: cp=" + std::to_string(k.cp) + " does not fit the levels of '" + cluster.name + "' (" +
                             std::to_string(cluster.num_devices()) + " devices, tp=" + std::to_string(k.tp) + ")");
  int pp_level = -1, pp_reach = 1;  // pp_reach: stages per block of pp_level, taken from the level inside
  if (k.pp > 1) {
    // Megatron's rank order (tp-cp-ep-dp-pp) puts the stages outermost: the outermost level with
    // data ranks takes them, reaching into the next level when it holds fewer (8 stages on 4 racks).
    for (int l = levels - 1; l >= 0 && pp_level < 0; --l) {
      if (rest[l] == 1) continue;
      if (rest[l] % k.pp == 0) pp_level = l;
      else if (l > 0 && cp_at[l] == 1 && k.pp % rest[l] == 0 && rest[l - 1] % (k.pp / rest[l]) == 0)
        pp_level = l, pp_reach = k.pp / rest[l];
      break;
    }
    // Otherwise the stages cannot lie outermost (3 racks, pp=2): the outermost level they divide.
    for (int l = levels - 1; l >= 0 && pp_level < 0; --l)
      if (rest[l] % k.pp == 0) pp_level = l;
    if (pp_level < 0)
      throw std::runtime_error("megatron: pp=" + std::to_string(k.pp) + " divides no topology level of '" + cluster.name +
                               "' (" + std::to_string(cluster.num_devices()) + " devices, tp=" + std::to_string(k.tp) + ")");
  }
  const int dp = cluster.num_devices() / (k.tp * k.pp * k.cp);
  if (k.dp && k.dp != dp)
    throw std::runtime_error("megatron: dp=" + std::to_string(k.dp) + " but " + std::to_string(cluster.num_devices()) +
                             " devices / (tp=" + std::to_string(k.tp) + " x pp=" + std::to_string(k.pp) +
                             (k.cp > 1 ? " x cp=" + std::to_string(k.cp) : std::string()) + ") = " + std::to_string(dp));
  const int etp = expert_tp(k);
  if (etp != 1 && etp != k.tp)
    throw std::runtime_error("megatron: etp=" + std::to_string(etp) + " must be 1 or tp (" + std::to_string(k.tp) + ")");
  if ((k.tp * dp) % (k.ep * etp) != 0)
    throw std::runtime_error("megatron: ep=" + std::to_string(k.ep) + " x etp=" + std::to_string(etp) +
                             " does not divide tp x dp = " + std::to_string(k.tp * dp) + " ranks per stage");
  const bool ep_over_tp = etp == 1 && k.tp > 1;
  if (ep_over_tp && k.ep % k.tp != 0)
    throw std::runtime_error("megatron: with etp=1, ep=" + std::to_string(k.ep) + " must be a multiple of tp=" +
                             std::to_string(k.tp) + " (the expert group folds over the tensor-parallel ranks first)");
  // The data-parallel ranks of a level: what tp, cp and the stages leave.
  const auto data_ranks = [&](int l) {
    if (l == pp_level) return pp_reach > 1 ? 1 : rest[l] / k.pp;
    return l == pp_level - 1 ? rest[l] / pp_reach : rest[l];
  };
  // The ep ranks among the data-parallel ones (not the context-parallel ones), innermost level first.
  std::vector<int> ep_part(levels, 1);
  int left = ep_over_tp ? k.ep / k.tp : k.ep;
  for (int l = 0; l < levels && left > 1; ++l) {
    const int data = data_ranks(l);
    if (data % left == 0) ep_part[l] = left, left = 1;
    else if (left % data == 0) ep_part[l] = data, left /= data;
    else break;
  }
  if (left > 1)
    throw std::runtime_error("megatron: ep=" + std::to_string(k.ep) + " does not fold over the data-parallel ranks of '" +
                             cluster.name + "' (" + std::to_string(dp) + " per stage)");
  // HSDP's replicas: the outermost data-parallel ranks that the experts do not take, from the
  // outermost level inwards (a level split where the replicas take part of it).
  std::vector<int> replicate_part(levels, 1);
  if (k.replicate > 1) {
    int rep_left = k.replicate;
    for (int l = levels - 1; l >= 0 && rep_left > 1; --l) {
      const int data = (l == pp_level ? rest[l] / k.pp : rest[l]) / ep_part[l];
      if (data <= 1) continue;
      if (rep_left % data == 0) replicate_part[l] = data, rep_left /= data;
      else if (data % rep_left == 0) replicate_part[l] = rep_left, rep_left = 1;
      else break;
    }
    if (rep_left > 1 || dp % k.replicate != 0 || dp == k.replicate)
      throw std::runtime_error("megatron: replicate=" + std::to_string(k.replicate) +
                               " does not split the data-parallel ranks of '" + cluster.name + "' (" + std::to_string(dp) +
                               " per stage) into replicas of outer ranks, each sharding over more than one");
  }
  MegatronMesh m;
  int axis = 0;
  std::vector<int> ep_dp_axes;
  for (int l = levels - 1; l >= 0; --l) {
    std::vector<int> factors;
    const int data = data_ranks(l);
    if (l == pp_level) {
      factors.push_back(k.pp);
      m.pipeline_axis = axis++;
    }
    if (replicate_part[l] > 1) {
      factors.push_back(replicate_part[l]);
      m.replicate_axes.push_back(axis);
      m.dp_axes.push_back(axis);
      m.edp_axes.push_back(axis++);
    }
    if (data / ep_part[l] / replicate_part[l] > 1) {
      factors.push_back(data / ep_part[l] / replicate_part[l]);
      m.dp_axes.push_back(axis);
      m.edp_axes.push_back(axis++);
    }
    if (ep_part[l] > 1) {
      factors.push_back(ep_part[l]);
      m.dp_axes.push_back(axis);
      ep_dp_axes.push_back(axis++);
    }
    if (cp_at[l] > 1) {
      factors.push_back(cp_at[l]);
      m.cp_axes.push_back(axis++);
    }
    if (l == 0 && k.tp > 1) {
      factors.push_back(k.tp);
      m.tp_axis = axis++;
    }
    if (factors.empty()) {
      factors.push_back(1);
      ++axis;
    }
    m.factors.push_back(factors);
  }
  m.ep_axes = ep_dp_axes;
  if (ep_over_tp) m.ep_axes.push_back(m.tp_axis);
  return m;
}

}  // namespace symtensor::compiler
