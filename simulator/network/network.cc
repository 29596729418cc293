#include "simulator/network/network.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace symtensor::sim {

Network::Network(int num_endpoints, std::vector<double> level_bandwidth)
    : num_levels_(static_cast<int>(level_bandwidth.size())) {
  links_.resize(static_cast<size_t>(num_endpoints) * num_levels_ * 2);
  for (int e = 0; e < num_endpoints; ++e)
    for (int l = 0; l < num_levels_; ++l)
      for (int dir = 0; dir < 2; ++dir) links_[link_id(e, l, dir == 1)].bandwidth = level_bandwidth[l];
}

Network::Network(const std::vector<std::vector<double>>& bandwidth)
    : num_levels_(bandwidth.empty() ? 0 : static_cast<int>(bandwidth.front().size())) {
  links_.resize(bandwidth.size() * num_levels_ * 2);
  for (std::size_t e = 0; e < bandwidth.size(); ++e) {
    if (static_cast<int>(bandwidth[e].size()) != num_levels_)
      throw std::logic_error(fmt::format("network: endpoint {} has {} levels, not {}", e, bandwidth[e].size(), num_levels_));
    for (int l = 0; l < num_levels_; ++l)
      for (int dir = 0; dir < 2; ++dir) links_[link_id(static_cast<int>(e), l, dir == 1)].bandwidth = bandwidth[e][l];
  }
}

int Network::link_id(int endpoint, int level, bool ingress) const {
  return (endpoint * num_levels_ + level) * 2 + (ingress ? 1 : 0);
}

void Network::update(double now, int id, std::vector<FlowFinish>& updates) {
  Flow& f = flows_[id];
  f.remaining = std::max(0.0, f.remaining - f.rate * (now - f.last_update));
  f.last_update = now;
  double rate = f.cap;
  for (int l : f.links) rate = std::min(rate, links_[l].bandwidth / static_cast<double>(links_[l].flows.size()));
  f.rate = rate;
  ++f.version;
  updates.push_back({id, f.version, f.remaining > 0 ? now + f.remaining / rate : now});
}

void Network::reschedule(double now, int a, int b, int except, std::vector<FlowFinish>& updates) {
  scratch_.clear();
  for (int link : {a, b})
    for (int id : links_[link].flows)
      if (id != except) scratch_.push_back(id);
  std::sort(scratch_.begin(), scratch_.end());
  scratch_.erase(std::unique(scratch_.begin(), scratch_.end()), scratch_.end());
  for (int id : scratch_) update(now, id, updates);
}

int Network::start(double now, int src, int dst, int level, double bytes, double cap,
                   std::vector<FlowFinish>& updates) {
  if (level < 0 || level >= num_levels_) throw std::logic_error(fmt::format("network: no level {}", level));
  if (links_[link_id(src, level, false)].bandwidth <= 0)
    throw std::runtime_error(fmt::format("network: level {} has no bandwidth", level));
  if (!(cap > 0)) throw std::logic_error(fmt::format("network: flow capped at {} bytes/s", cap));
  int id;
  if (free_ids_.empty()) {
    id = static_cast<int>(flows_.size());
    flows_.emplace_back();
  } else {
    id = free_ids_.back();
    free_ids_.pop_back();
  }
  Flow& f = flows_[id];
  f.links[0] = link_id(src, level, false);
  f.links[1] = link_id(dst, level, true);
  f.remaining = bytes;
  f.rate = 0;
  f.cap = cap;
  f.last_update = now;
  f.active = true;
  ++active_;
  for (int l : f.links) links_[l].flows.push_back(id);
  reschedule(now, f.links[0], f.links[1], id, updates);
  update(now, id, updates);
  return id;
}

bool Network::finish(const FlowFinish& event, std::vector<FlowFinish>& updates) {
  Flow& f = flows_[event.flow];
  if (!f.active || f.version != event.version) return false;
  f.active = false;
  f.remaining = 0;
  --active_;
  for (int l : f.links) {
    auto& list = links_[l].flows;
    list.erase(std::find(list.begin(), list.end(), event.flow));
  }
  free_ids_.push_back(event.flow);
  reschedule(event.time, f.links[0], f.links[1], -1, updates);
  return true;
}

}  // namespace symtensor::sim
