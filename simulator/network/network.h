#pragma once
// Links shared by concurrent flows. Every endpoint (a simulated rank) has one egress and
// one ingress link per topology level (the NVSwitch port at level 0, the NIC at level 1,
// ...), each with that level's per-direction bandwidth. A flow uses the sender's egress
// and the receiver's ingress at the level that joins them and gets the smaller of the two
// fair shares (bandwidth / flows on the link), never more than its own cap. Whenever a flow
// starts or ends, the flows sharing a link with it get new rates and new finish times.
#include <cstdint>
#include <vector>

namespace symtensor::sim {

struct FlowFinish {
  int flow = 0;
  std::uint32_t version = 0;  // a finish whose version is no longer current is stale
  double time = 0;
};

class Network {
 public:
  Network(int num_endpoints, std::vector<double> level_bandwidth);
  // Each endpoint with its own bandwidth per level (`bandwidth[endpoint][level]`): the ranks
  // of a mixed fleet, whose groups have NICs of different speeds.
  explicit Network(const std::vector<std::vector<double>>& bandwidth);

  // Starts a flow of `bytes` at `now`, at most `cap` bytes/s whatever the links' shares
  // (the links of a mesh a flow can use: see Engine::flow_cap); appends new finish times
  // (its own and those of the flows it slows down) to `updates`. Returns the flow id.
  int start(double now, int src, int dst, int level, double bytes, double cap, std::vector<FlowFinish>& updates);
  // True when `finish` is current: the flow then ends, its id is released, and the flows
  // it shared links with get faster (appended to `updates`).
  bool finish(const FlowFinish& finish, std::vector<FlowFinish>& updates);

  int active_flows() const { return active_; }

 private:
  struct Flow {
    int links[2] = {0, 0};
    double remaining = 0;
    double rate = 0;
    double cap = 0;
    double last_update = 0;
    std::uint32_t version = 0;
    bool active = false;
  };
  struct Link {
    double bandwidth = 0;
    std::vector<int> flows;
  };

  int link_id(int endpoint, int level, bool ingress) const;
  void reschedule(double now, int a, int b, int except, std::vector<FlowFinish>& updates);
  void update(double now, int flow, std::vector<FlowFinish>& updates);

  int num_levels_;
  std::vector<Link> links_;
  std::vector<Flow> flows_;
  std::vector<int> free_ids_;
  std::vector<int> scratch_;
  int active_ = 0;
};

}  // namespace symtensor::sim
